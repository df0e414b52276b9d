// The skinning viewer: registers a .glb with the server, poses it there (Connect calls and
// WebSocket sessions on the same origin) and draws the vertices it answers with three.js. All
// skinning happens on the server; this page only shows it.
import * as THREE from "three";
import { OrbitControls } from "three/addons/controls/OrbitControls.js";
import { create, fromBinary, toBinary, toJsonString } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { RigService } from "../gen/skinning/v1/rig_service_pb.js";
import { RigView } from "../gen/skinning/v1/rig_pb.js";
import { Deformer } from "../gen/skinning/v1/pose_pb.js";
import {
  PoseRequestSchema,
  PoseService,
  PoseSessionRequestSchema,
  PoseSessionResponseSchema,
} from "../gen/skinning/v1/pose_service_pb.js";
import { BakeState } from "../gen/skinning/v1/bake_pb.js";
import { BakeService, WeightsFormat } from "../gen/skinning/v1/bake_service_pb.js";
import { HandleConstraint_Kind } from "../gen/skinning/v1/fast_pb.js";
import {
  SolveSessionRequestSchema,
  SolveSessionResponseSchema,
} from "../gen/skinning/v1/fast_service_pb.js";

const $ = (id) => document.getElementById(id);
const transport = createConnectTransport({
  baseUrl: location.origin, useBinaryFormat: true, interceptors: [(next) => (req) => retryWhileAway(next, req)],
});
const rigs = createClient(RigService, transport);
const poses = createClient(PoseService, transport);
const bakes = createClient(BakeService, transport);

// What tests read (tests/web/*.mjs).
const probe = { ready: false, lastPose: null, fast: null, progress: [], errors: [], bakeDone: false, fastReady: false,
  sessionBakes: [], sessionFrames: 0, fastFrames: 0, bakeName: null, poses: 0, uploadBytes: 0,
  keepSessionFrame: false, sessionFrame: null };
window.__viewer = probe;

// ---- Errors in plain words --------------------------------------------------------------
const PLAIN = {
  [Code.InvalidArgument]: "The server refused the input",
  [Code.NotFound]: "Not found",
  [Code.FailedPrecondition]: "That needs something first",
  [Code.ResourceExhausted]: "Over a limit of the server",
  [Code.Unauthenticated]: "The server needs a token",
  [Code.PermissionDenied]: "Not allowed",
  [Code.Unavailable]: "The server is not reachable or is restarting; try again",
  [Code.DeadlineExceeded]: "The server took too long",
  [Code.Unimplemented]: "The server does not offer that",
  [Code.Internal]: "The server failed",
};

function say(text) {
  $("status").textContent = text;
  $("status").className = "";
}

function fail(what, err) {
  let text;
  if (err instanceof ConnectError) text = `${what}: ${PLAIN[err.code] ?? "Error"}. ${err.rawMessage}`;
  else text = `${what}: ${err?.message ?? err}`;
  $("status").textContent = text;
  $("status").className = "error";
  probe.errors.push(text);
}

// ---- The server going away ---------------------------------------------------------------
// A replica that drains (a rolling update, a scale-down) answers UNAVAILABLE (HTTP 503) and
// closes its WebSocket sessions; one that crashed or restarts refuses or drops connections (fetch
// fails with a TypeError); one whose Redis store is out answers UNAVAILABLE naming it. None is
// an error: another replica, this one restarted, or the store once back, takes the work. Every
// call of this page may be made again (rigs are content-addressed, an identical bake is reused),
// so calls, the bake watch and sessions are made again with backoff (100 ms doubling to 2 s)
// while the status line says so; an error only after REOPEN_LIMIT_MS of that.
const REOPEN_LIMIT_MS = 30000;
const AWAY_TOO_LONG = `the server went away and did not come back in ${REOPEN_LIMIT_MS / 1000} s`;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// A server that answered, UNAVAILABLE: it drains, or what it needs is (its Redis store): its
// message says which.
const answeredUnavailable = (e) => e instanceof ConnectError && e.code === Code.Unavailable;

function wentAway(e) {
  if (e instanceof TypeError) return true;  // fetch: nothing listens, or the connection dropped
  if (answeredUnavailable(e)) return true;
  return e instanceof ConnectError && e.code === Code.Unknown && e.cause instanceof TypeError;  // the same, wrapped
}

// The status line while retrying: the server's own reason when it answered UNAVAILABLE (a call's
// message, a session's close reason), else that it went away.
function sayRetrying(reason) {
  say(reason ? `The server is unavailable (${reason}); retrying…` : "The server went away; reconnecting…");
}

// The backoff after `last` (null at the first failure): { since, delay } with `delay` the wait
// before the next attempt, or null once the failures have lasted REOPEN_LIMIT_MS.
function nextBackoff(last) {
  const since = last?.since ?? performance.now();
  if (performance.now() - since > REOPEN_LIMIT_MS) return null;
  return { since, delay: last ? Math.min(2000, 2 * last.delay) : 100 };
}

// After `e`, a failure that found the server away (wentAway): says so, waits out the backoff that
// follows `last` and returns it; once the retries are over, throws the server's answer, or that
// it did not come back.
async function waitToRetry(e, last) {
  const next = nextBackoff(last);
  if (!next) throw answeredUnavailable(e) ? e : new ConnectError(AWAY_TOO_LONG, Code.Unavailable, undefined, undefined, e);
  sayRetrying(answeredUnavailable(e) ? e.rawMessage : "");
  await sleep(next.delay);
  return next;
}

// A unary call (the transport's interceptor), made again while the server is away.
async function retryWhileAway(next, req) {
  if (req.stream) return next(req);  // the bake watch: runBake opens it again
  for (let backoff = null; ;) {
    try {
      const res = await next(req);
      if (backoff) say("Connected to the server again.");
      return res;
    } catch (e) {
      if (!wentAway(e) || req.signal.aborted) throw e;
      backoff = await waitToRetry(e, backoff);
    }
  }
}

// ---- Scene -------------------------------------------------------------------------------
const canvas = $("view");
const renderer = new THREE.WebGLRenderer({ canvas, antialias: true, preserveDrawingBuffer: true });
// Sharp on a phone's or a laptop's dense screen (up to 2 device pixels per CSS pixel).
renderer.setPixelRatio(Math.min(window.devicePixelRatio || 1, 2));
const scene = new THREE.Scene();
scene.background = new THREE.Color(0xe8ecf0);
const camera = new THREE.PerspectiveCamera(40, 1, 0.01, 1000);
let controls = new OrbitControls(camera, canvas);
scene.add(new THREE.HemisphereLight(0xffffff, 0x667788, 1.2));
const sun = new THREE.DirectionalLight(0xffffff, 1.5);
sun.position.set(2, 4, 3);
scene.add(sun);
const material = new THREE.MeshStandardMaterial({ color: 0xd0b090, roughness: 0.8, side: THREE.DoubleSide });
let mesh = null;
const handleGroup = new THREE.Group();
scene.add(handleGroup);

function resize() {
  const w = canvas.clientWidth, h = canvas.clientHeight;
  const ratio = renderer.getPixelRatio();
  if (canvas.width !== Math.floor(w * ratio) || canvas.height !== Math.floor(h * ratio)) {
    renderer.setSize(w, h, false);
    camera.aspect = w / h;
    camera.updateProjectionMatrix();
  }
}

// ---- State --------------------------------------------------------------------------------
const S = {
  rig: "", full: null, bind: null, diag: 1, clips: [], clipFrames: null, clipKey: "", frame: 0, playing: false,
  source: "rest", manual: null, bakes: {}, weights: null, fastBake: "", fastWs: null, handles: [],
  solution: null, poseWs: null, upload: null, shapes: null,
};

const DEFORMERS = {
  LBS: Deformer.UNSPECIFIED, DQS: Deformer.DQS, STBS_DQS: Deformer.STBS_DQS, SWING_TWIST: Deformer.SWING_TWIST,
  PSD_LBS: Deformer.PSD_LBS, ELASTIC: Deformer.ELASTIC,
};
const deformer = () => DEFORMERS[$("method").value];
// The bake a frame is posed with: the deformer's own bake, else the last weights bake (none:
// the rig's weights).
function bakeFor() {
  const m = $("method").value;
  if (m === "STBS_DQS") return S.bakes.endpoint ?? "";
  if (m === "SWING_TWIST") return S.bakes.swingTwist ?? "";
  if (m === "ELASTIC") return S.bakes.elasticModel ?? "";
  return S.bakes.weights ?? "";
}

function showVertices(vertices) {
  if (!mesh) return;
  const pos = mesh.geometry.attributes.position;
  pos.array.set(vertices);
  pos.needsUpdate = true;
  mesh.geometry.computeVertexNormals();
}

// Frames the camera on `vertices` (the bind pose of some rigs lies down; their animations stand
// them up, so the first frames shown of each kind are framed again).
function fitCamera(vertices) {
  const box = new THREE.Box3().setFromArray(vertices);
  const centre = box.getCenter(new THREE.Vector3());
  const extent = box.getSize(new THREE.Vector3());
  const size = extent.length();
  // Up along the longest side, looking along the shortest: a character seen from the front.
  const axes = [0, 1, 2].sort((a, b) => extent.getComponent(a) - extent.getComponent(b));
  const unit = (a) => new THREE.Vector3().setComponent(a, 1);
  camera.up.copy(unit(axes[2]));
  camera.near = size / 1000;
  camera.far = size * 100;
  camera.position.copy(centre).addScaledVector(unit(axes[0]), size * 1.7).addScaledVector(unit(axes[2]), size * 0.1);
  camera.updateProjectionMatrix();
  controls.dispose();
  controls = new OrbitControls(camera, canvas);
  controls.target.copy(centre);
  controls.update();
}

// ---- Rigs ---------------------------------------------------------------------------------
async function listRigs() {
  const res = await rigs.listRigs({});
  const select = $("rigs");
  select.innerHTML = "";
  for (const r of res.rigs) {
    const o = document.createElement("option");
    o.value = r.name;
    o.textContent = `${r.displayName || r.name} (${r.vertexCount} v, ${r.jointCount} j)`;
    select.appendChild(o);
  }
  if (S.rig) select.value = S.rig;
}

// glTF's rest transform paths, each with its default (the identity), which a joint without one has.
const TRS = [["translation", [0, 0, 0]], ["rotation", [0, 0, 0, 1]], ["scale", [1, 1, 1]]];

// A joint's rest value of one path (a copy), or the path's default where the rig gives none.
const restValue = (J, path, identity) => [...(J.rest?.[path]?.length === identity.length ? J.rest[path] : identity)];

// A joint's rest transform, defaults filled in.
const restOf = (J) => Object.fromEntries(TRS.map(([path, identity]) => [path, restValue(J, path, identity)]));

// A joint's rest transform as a matrix (relative to its parent).
function restMatrix(J) {
  const { translation, rotation, scale } = restOf(J);
  return new THREE.Matrix4().compose(new THREE.Vector3(...translation), new THREE.Quaternion(...rotation),
                                     new THREE.Vector3(...scale));
}

// A rig's 3x4 row-major matrix as a Matrix4.
const matrixOfRows = (b) => new THREE.Matrix4().set(...b.slice(0, 12), 0, 0, 0, 1);

// Each joint's world transform of the rest pose: the chain of rest transforms from its root.
function restWorlds(skeleton) {
  const world = [];
  const of = (j) => {
    const J = skeleton[j];
    world[j] ??= J.parent >= 0 ? of(J.parent).clone().multiply(restMatrix(J)) : restMatrix(J);
    return world[j];
  };
  return skeleton.map((_, j) => of(j));
}

function bindPositions(rig) {
  // Joint positions in bind space: the inverse of each inverse bind matrix, else the rest chain.
  const joints = rig.skeleton.joints;
  const world = [];
  for (let j = 0; j < joints.length; ++j) {
    const J = joints[j];
    if (J.inverseBind.length === 12) {
      world.push(matrixOfRows(J.inverseBind).invert());
    } else {
      world.push(J.parent >= 0 ? world[J.parent].clone().multiply(restMatrix(J)) : restMatrix(J));
    }
  }
  return world.map((m) => new THREE.Vector3().setFromMatrixPosition(m));
}

// `note` ends the status line (what the upload left out).
async function openRig(name, clips = [], note = "") {
  const rig = await rigs.getRig({ name, view: RigView.FULL });
  S.rig = name;
  S.full = rig;
  S.clips = clips;
  S.clipFrames = null;
  S.clipFramed = false;
  S.bakes = {};
  S.weights = null;
  S.source = "rest";
  S.solution = null;
  closeSockets();
  const positions = new Float32Array(rig.mesh.positions);
  S.bind = positions;
  const geometry = new THREE.BufferGeometry();
  geometry.setAttribute("position", new THREE.BufferAttribute(positions.slice(), 3));
  geometry.setAttribute("color", new THREE.BufferAttribute(new Float32Array(positions.length), 3));
  geometry.setIndex(rig.mesh.triangles);
  geometry.computeVertexNormals();
  geometry.computeBoundingBox();
  if (mesh) scene.remove(mesh);
  mesh = new THREE.Mesh(geometry, material);
  scene.add(mesh);
  S.diag = geometry.boundingBox.getSize(new THREE.Vector3()).length();
  probe.diag = S.diag;
  fitCamera(positions);
  S.jointWorld = bindPositions(rig);
  handleGroup.clear();
  // Controls.
  const animation = $("animation");
  animation.innerHTML = "";
  clips.forEach((c, i) => {
    const o = document.createElement("option");
    o.value = String(i);
    o.textContent = `${c.name} (${c.poses.length} frames)`;
    animation.appendChild(o);
  });
  $("play").disabled = clips.length === 0;
  $("frame").disabled = clips.length === 0;
  $("frame").max = String(clips.length ? clips[0].poses.length - 1 : 0);
  $("frame").value = "0";
  showShapes(rig);
  const joint = $("joint");
  joint.innerHTML = "";
  rig.skeleton.joints.forEach((J, j) => {
    const o = document.createElement("option");
    o.value = String(j);
    o.textContent = J.name || `joint ${j}`;
    joint.appendChild(o);
  });
  $("bake").disabled = false;
  $("fast").disabled = false;
  $("download").disabled = false;
  $("delete-rig").disabled = false;
  $("show-weights").disabled = true;
  $("show-weights").checked = false;
  material.vertexColors = false;
  material.needsUpdate = true;
  $("rigs").value = name;
  say(`${rig.displayName || name}: ${rig.vertexCount} vertices, ${rig.jointCount} joints` +
      (rig.influenceCount ? `, ${rig.influenceCount} influences per vertex` : ", no weights (bake some)") +
      (clips.length ? `, ${clips.length} animation(s)` : "") +
      (rig.morphTargets.length ? `, ${rig.morphTargets.length} shape(s)` : "") + note);
  probe.opened = name;
}

// Deletes the open rig from the server once the user confirms (the caller's examples and stored
// animations go with it, and its bakes once no one else has it), then empties the view.
async function deleteRig() {
  const name = S.rig;
  if (!name) return;
  const label = S.full?.displayName || name;
  if (!confirm(`Delete ${label} from the server, with your examples and animations of it?`)) return;
  try {
    await rigs.deleteRig({ name });
  } catch (e) {
    fail("Deleting the rig", e);
    return;
  }
  closeSockets();
  if (mesh) scene.remove(mesh);
  mesh = null;
  handleGroup.clear();
  Object.assign(S, { rig: "", full: null, clips: [], clipFrames: null, bakes: {}, weights: null, source: "rest",
                     manual: null, shapes: null, playing: false, solution: null, handles: [] });
  for (const id of ["animation", "joint", "shape"]) $(id).innerHTML = "";
  for (const id of ["play", "frame", "bake", "fast", "download", "show-weights", "delete-rig"]) $(id).disabled = true;
  $("play").textContent = "Play";
  $("shapes").hidden = true;
  await listRigs();
  say(`Deleted ${label}.`);
  probe.deleted = name;
}

// The rig's morph targets (blend shapes) in the Shapes list, with their default weights; hidden
// for a rig without any.
function showShapes(rig) {
  const shape = $("shape");
  shape.innerHTML = "";
  rig.morphTargets.forEach((t, i) => {
    const o = document.createElement("option");
    o.value = String(i);
    o.textContent = t.name || `target ${i}`;
    shape.appendChild(o);
  });
  $("shapes").hidden = rig.morphTargets.length === 0;
  S.shapes = null;
  showShapeWeight();
}

// The slider at the chosen shape's weight: the manual pose's, else its default.
function showShapeWeight() {
  const t = Number($("shape").value);
  const targets = S.full?.morphTargets ?? [];
  if (t < targets.length) $("shape-weight").value = String(S.shapes ? S.shapes[t] : targets[t].defaultWeight);
}

// A file's bytes as a data: URI of application/octet-stream (one the server's glTF reader takes,
// whatever type the browser gives the file: some map .bin to application/macbinary).
const octetStreamUri = (file) => new Promise((resolve, reject) => {
  const reader = new FileReader();
  reader.onload = () => resolve(reader.result);
  reader.onerror = () => reject(reader.error);
  reader.readAsDataURL(new Blob([file], { type: "application/octet-stream" }));
});

// ---- glTF binaries -------------------------------------------------------------------------
const GLB_MAGIC = 0x46546c67, JSON_CHUNK = 0x4e4f534a, BIN_CHUNK = 0x004e4942;
const pad4 = (n) => Math.ceil(n / 4) * 4;

// A glTF 2.0 binary of a JSON document and a binary chunk given as byte arrays in order: the JSON
// padded with spaces, the chunk with zeros, to multiples of 4 bytes.
function writeGlb(doc, binParts) {
  const json = new TextEncoder().encode(JSON.stringify(doc));
  const binLength = binParts.reduce((n, part) => n + part.length, 0);
  const jsonAt = 20, binAt = jsonAt + pad4(json.length);
  const out = new Uint8Array(binAt + 8 + pad4(binLength));
  const put = new DataView(out.buffer);
  put.setUint32(0, GLB_MAGIC, true);
  put.setUint32(4, 2, true);
  put.setUint32(8, out.length, true);
  put.setUint32(12, binAt - jsonAt, true);
  put.setUint32(16, JSON_CHUNK, true);
  out.set(json, jsonAt);
  out.fill(0x20, jsonAt + json.length, binAt);
  put.setUint32(binAt, pad4(binLength), true);
  put.setUint32(binAt + 4, BIN_CHUNK, true);
  let at = binAt + 8;
  for (const part of binParts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

// A glTF 2.0 binary's JSON, and where its binary chunk starts and how long it is (binLength −1
// when it has none that fits the file); null for anything else, and for JSON that does not parse
// (the server says what is wrong with it).
function glbParts(bytes) {
  const data = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const u32 = (at) => (at + 4 <= bytes.length ? data.getUint32(at, true) : -1);
  const jsonLength = u32(12);
  if (u32(0) !== GLB_MAGIC || u32(4) !== 2 || u32(16) !== JSON_CHUNK || jsonLength < 0) return null;
  const binAt = 20 + jsonLength;
  let doc;
  try {
    doc = JSON.parse(new TextDecoder().decode(bytes.subarray(20, binAt)));
  } catch {
    return null;
  }
  const binLength = u32(binAt);
  const fits = u32(binAt + 4) === BIN_CHUNK && binLength >= 0 && binAt + 8 + binLength <= bytes.length;
  return { doc, binAt, binLength: fits ? binLength : -1 };
}

// A .glb's embedded images (its textures: often most of an exported character's bytes) cut out of
// its binary chunk before it is sent: the server reads no image, so a phone need not send them,
// nor does a file need to fit --max_message_mb with them. Each image's buffer view becomes one byte
// at offset 0; every other view of the chunk, and EXT_meshopt_compression's ranges in it, move
// down by what was cut before them, in multiples of 4 bytes so that every accessor keeps its
// alignment. Bytes that anything but an image uses are never cut. A file that is not a plain
// glTF 2.0 binary (`glb`, from glbParts, is null), or has no embedded image, is sent as it is.
function withoutGlbImages(bytes, glb) {
  if (!glb || glb.binLength < 0) return bytes;
  const { doc, binAt, binLength } = glb;
  const views = Array.isArray(doc.bufferViews) ? doc.bufferViews : [];
  // Views the mesh reads (accessors, sparse parts, Draco streams) are no image's, whatever uses them.
  const meshViews = new Set();
  for (const a of doc.accessors ?? []) {
    for (const v of [a?.bufferView, a?.sparse?.indices?.bufferView, a?.sparse?.values?.bufferView]) meshViews.add(v);
  }
  for (const mesh of doc.meshes ?? []) {
    for (const p of mesh?.primitives ?? []) meshViews.add(p?.extensions?.KHR_draco_mesh_compression?.bufferView);
  }
  const images = new Set((doc.images ?? []).map((image) => image?.bufferView)
    .filter((v) => Number.isInteger(v) && !meshViews.has(v)));
  const inChunk = (v) => v && (v.buffer ?? 0) === 0 && Number.isInteger(v.byteLength);
  const range = (v) => [v.byteOffset ?? 0, (v.byteOffset ?? 0) + v.byteLength];  // [first byte, past the last)
  if (!images.size || doc.buffers?.[0]?.uri !== undefined) return bytes;
  // The ranges of the chunk that something but an image reads.
  const used = [];
  views.forEach((v, i) => {
    if (inChunk(v) && !images.has(i)) used.push(range(v));
    const packed = v?.extensions?.EXT_meshopt_compression;
    if (inChunk(packed)) used.push(range(packed));
  });
  const cuts = [];
  for (const i of images) {
    const v = views[i];
    if (!inChunk(v)) continue;
    const [first, past] = range(v);
    const start = Math.ceil(first / 4) * 4, end = Math.floor(past / 4) * 4;
    if (end - start >= 4 && end <= binLength && !used.some(([a, b]) => a < end && start < b)) cuts.push([start, end]);
  }
  if (!cuts.length) return bytes;
  cuts.sort((x, y) => x[0] - y[0]);
  const merged = [];
  for (const [a, b] of cuts) {
    const last = merged[merged.length - 1];
    if (last && a <= last[1]) last[1] = Math.max(last[1], b);
    else merged.push([a, b]);
  }
  const cutBefore = (offset) => merged.reduce((sum, [a, b]) => sum + (b <= offset ? b - a : 0), 0);
  const moveDown = (v) => { v.byteOffset = range(v)[0] - cutBefore(range(v)[0]); };
  const isCut = (v) => merged.some(([a, b]) => a < range(v)[1] && range(v)[0] < b);
  views.forEach((v, i) => {
    if (inChunk(v) && images.has(i) && isCut(v)) Object.assign(v, { byteOffset: 0, byteLength: 1 });
    else if (inChunk(v)) moveDown(v);
    const packed = v?.extensions?.EXT_meshopt_compression;
    if (inChunk(packed)) moveDown(packed);
  });
  const removed = merged.reduce((sum, [a, b]) => sum + b - a, 0);
  doc.buffers[0].byteLength -= removed;
  // The chunk's bytes but the cut ranges.
  const kept = [];
  let read = 0;
  for (const [a, b] of [...merged, [binLength, binLength]]) {
    kept.push(bytes.subarray(binAt + 8 + read, binAt + 8 + a));
    read = b;
  }
  return writeGlb(doc, kept);
}

// The scenes a file offers when it has several (Blender writes one per scene of the .blend):
// their labels as the server names them, and the one it reads unless told (the file's `scene`,
// else the first). Null for a file with one scene or none.
function sceneChoices(doc) {
  const scenes = Array.isArray(doc?.scenes) ? doc.scenes : [];
  if (scenes.length < 2) return null;
  const named = (sc) => typeof sc?.name === "string" && sc.name;
  const labels = scenes.map((sc, i) => `scenes[${i}]` + (named(sc) ? ` ("${sc.name}")` : ""));
  const fallback = Number.isInteger(doc.scene) && doc.scene >= 0 && doc.scene < scenes.length ? doc.scene : 0;
  return { labels, fallback };
}

// The character among the chosen or dropped files: a .glb (or a .vrm: VRoid Studio's and UniVRM's
// avatars are glTF binaries, their VRM extensions ignored) as it is, or a .gltf whose buffers are
// files beside it (Blender's "glTF Separate", the glTF sample models) with those files embedded
// as data: URIs, since the server reads nothing but what it is sent. Image files are not needed:
// the server reads no image (a .glb's embedded ones, and a .gltf's data: URI ones, are left out).
// Answers {file, bytes, scenes} (scenes from sceneChoices).
async function characterFile(files) {
  const characters = files.filter((f) => /\.(glb|vrm|gltf)$/i.test(f.name));
  if (characters.length !== 1) {
    throw new Error(characters.length ? `choose one .glb, .vrm or .gltf at a time, not ${characters.length}`
                                      : "choose a .glb or .vrm, or a .gltf with the .bin files it names");
  }
  const file = characters[0];
  const bytes = new Uint8Array(await file.arrayBuffer());
  if (/\.(glb|vrm)$/i.test(file.name) || new TextDecoder().decode(bytes.subarray(0, 4)) === "glTF") {
    const glb = glbParts(bytes);
    const scenes = sceneChoices(glb?.doc);  // before withoutGlbImages edits the JSON
    return { file, bytes: withoutGlbImages(bytes, glb), scenes };
  }
  const doc = JSON.parse(new TextDecoder().decode(bytes));
  let changed = 0;
  // Images embedded as data: URIs are left out, as a .glb's are.
  for (const image of doc.images ?? []) {
    if (typeof image?.uri === "string" && image.uri.startsWith("data:")) {
      delete image.uri;
      ++changed;
    }
  }
  for (const buffer of doc.buffers ?? []) {
    if (typeof buffer.uri !== "string" || buffer.uri.startsWith("data:")) continue;
    const name = decodeURIComponent(buffer.uri).split("/").pop();
    const part = files.find((f) => f.name === name);
    if (!part) throw new Error(`${file.name} keeps a buffer in ${name}: choose or drop it together with the .gltf`);
    buffer.uri = await octetStreamUri(part);
    ++changed;
  }
  return { file, bytes: changed ? new TextEncoder().encode(JSON.stringify(doc)) : bytes, scenes: sceneChoices(doc) };
}

// The chooser of the last file's scenes, shown only for a file with several; `chosen` is the
// scene the upload asks for (undefined: the server's default, the file's own).
function showScenes(upload, chosen) {
  const select = $("scene");
  $("scene-row").hidden = !upload?.scenes;
  select.innerHTML = "";
  if (!upload?.scenes) return;
  upload.scenes.labels.forEach((label, i) => {
    const o = document.createElement("option");
    o.value = String(i);
    o.textContent = label + (i === upload.scenes.fallback ? " (the file's default)" : "");
    select.appendChild(o);
  });
  select.value = String(chosen ?? upload.scenes.fallback);
}

async function register(files) {
  const names = files.map((f) => f.name).join(", ");
  let upload;
  try {
    upload = await characterFile(files);
  } catch (e) {
    fail(`Registering ${names}`, e);
    return;
  }
  S.upload = upload;
  await sendCharacter(upload);
}

// Registers the chosen file, of a file with several scenes the one `chosen` (undefined: the file's
// default). When that fails, the scene chooser stays, so that another scene can be tried (the
// server names one that has a skinned mesh when the default has none).
async function sendCharacter(upload, chosen) {
  const { file, bytes } = upload;
  showScenes(upload, chosen);
  try {
    say(`Sending ${file.name} (${(bytes.length / 1024).toFixed(0)} KiB)…`);
    probe.uploadBytes = bytes.length;
    // Scenery exported with the character (a ground plane, a pedestal) is left out, and said so.
    const res = await rigs.createRig({
      source: { case: "gltf", value: bytes }, displayName: file.name.replace(/\.[^.]*$/, ""), skipStaticMeshes: true,
      ...(chosen === undefined ? {} : { scene: chosen }),
    });
    await listRigs();
    const skipped = res.skippedStaticMeshes;
    // Of a file with several scenes the server reads one and says which.
    const note = (res.scene ? `; read ${res.scene}` : "") +
                 (skipped.length ? `; left out (no skin or joint moves them): ${skipped.join(", ")}` : "");
    await openRig(res.rig.name, res.animations, note);
    probe.registered = res.rig.name;
  } catch (e) {
    const scene = upload.scenes ? `, ${upload.scenes.labels[chosen ?? upload.scenes.fallback]}` : "";
    fail(`Registering ${file.name}${scene}`, e);
  }
}

// ---- Posing -------------------------------------------------------------------------------
function restTransforms() {
  return S.full.skeleton.joints.map(restOf);
}

function currentPose() {
  if (S.source === "clip" && S.clips.length) return S.clips[Number($("animation").value)].poses[S.frame];
  if (S.source === "manual" && S.manual) return { joints: S.manual, morphWeights: S.shapes ?? [] };
  return { joints: [] };
}

// One frame through the unary Pose call (method switches, the bind pose).
async function poseOnce() {
  if (!S.rig) return;
  const request = create(PoseRequestSchema, {
    rig: S.rig, pose: currentPose(), deformer: deformer(), outputs: { vertices: true }, bake: bakeFor(),
  });
  try {
    const res = await poses.pose(request);
    showVertices(res.frame.vertices);
    probe.poses++;
    probe.lastPose = { request: toJsonString(PoseRequestSchema, request), vertices: Array.from(res.frame.vertices) };
    say(`Posed with ${$("method").value}${request.bake ? " and " + request.bake.split("/").pop() : ""}.`);
  } catch (e) {
    fail(`Posing with ${$("method").value}`, e);
  }
}

// The clip posed once per rig, method and bake (PoseClip), then played here at its rate.
async function loadClip() {
  const clip = S.clips[Number($("animation").value)];
  const key = `${S.rig}|${$("method").value}|${bakeFor()}|${$("animation").value}`;
  if (S.clipKey === key && S.clipFrames) return true;
  try {
    say(`Posing ${clip.poses.length} frames with ${$("method").value}…`);
    const res = await poses.poseClip({
      rig: S.rig, poses: clip.poses, deformer: deformer(), outputs: { vertices: true }, bake: bakeFor(),
    });
    S.clipFrames = res.frames.map((f) => f.vertices);
    if (!S.clipFramed) fitCamera(S.clipFrames[0]);
    S.clipFramed = true;
    S.clipKey = key;
    say(`${clip.name}: ${clip.poses.length} frames at ${clip.framesPerSecond.toFixed(0)} fps (${$("method").value}).`);
    return true;
  } catch (e) {
    fail(`Posing the animation with ${$("method").value}`, e);
    return false;
  }
}

function showFrame(f) {
  S.frame = f;
  S.source = "clip";
  $("frame").value = String(f);
  if (S.clipFrames) showVertices(S.clipFrames[f]);
  probe.frame = f;
}

async function togglePlay() {
  if (S.playing) {
    S.playing = false;
    $("play").textContent = "Play";
    return;
  }
  if (!(await loadClip())) return;
  S.playing = true;
  S.playStart = performance.now() - S.frame * 1000 / S.clips[Number($("animation").value)].framesPerSecond;
  $("play").textContent = "Pause";
  probe.played = true;
}

// Joint controls: live frames over the pose session WebSocket.
function sessionUrl(path) {
  return `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}${path}`;
}

function openPoseSession() {
  if (S.poseWs && S.poseWs.readyState <= 1) return S.poseWs;
  const ws = new WebSocket(sessionUrl("/skinning.v1.PoseService/PoseSession"));
  ws.binaryType = "arraybuffer";
  ws.first = true;
  ws.busy = false;
  ws.pending = null;
  ws.sequence = 0;
  ws.onmessage = (ev) => {
    const res = fromBinary(PoseSessionResponseSchema, new Uint8Array(ev.data));
    showVertices(res.frame.vertices);
    probe.sessionFrames++;
    if (probe.keepSessionFrame)
      probe.sessionFrame = { request: ws.sentJson, vertices: Array.from(res.frame.vertices) };
    ws.busy = false;
    if (ws.reopen) say("Connected to the server again.");
    ws.reopen = null;
    if (ws.pending) sendPose(ws, ws.pending);
  };
  ws.onclose = (ev) => {
    if (SERVER_WENT_AWAY.has(ev.code)) return reopenPoseSession(ws, closeReason(ev));
    if (ev.code >= 4000) fail("The pose session", { message: `closed by the server (${ev.code - 4000}): ${ev.reason}` });
    if (ev.code === 1008) fail("The pose session", { message: ev.reason });
  };
  S.poseWs = ws;
  return ws;
}

// Close codes of a server that went away rather than refused: 4014 (UNAVAILABLE: it drains),
// 1001 (going away) and 1006 (the connection dropped or could not be made). The session is opened
// again and the pose the old one had not answered is sent on it ("The server going away" above).
const SERVER_WENT_AWAY = new Set([4014, 1001, 1006]);
// What the server said when it closed a session with 4014 (it drains, or its store is out).
const closeReason = (ev) => (ev.code === 4014 ? ev.reason : "");

// Calls open(next) after the backoff that follows `last` (the failing session's reopen state,
// null at the first failure), or fails after REOPEN_LIMIT_MS of failures; `next` is the new
// session's state. `reason`: the server's, when it closed the session with 4014.
function scheduleReopen(what, last, open, reason) {
  const next = nextBackoff(last);
  if (!next) {
    fail(what, { message: reason || AWAY_TOO_LONG });
    return;
  }
  sayRetrying(reason);
  setTimeout(() => open(next), next.delay);
}

function reopenPoseSession(old, reason) {
  const pose = old.pending ?? (old.busy ? old.sent : null);
  if (!pose) return;  // nothing unanswered: the next pose opens a session
  scheduleReopen("The pose session", old.reopen, (next) => {
    if (S.poseWs !== old) return;  // a newer pose opened a session already (or the rig changed)
    const ws = openPoseSession();
    ws.reopen = next;
    sendPose(ws, pose);
  }, reason);
}

function sendPose(ws, pose) {
  if (ws.readyState !== 1 || ws.busy) {
    ws.pending = pose;
    if (ws.readyState === 0) ws.onopen = () => sendPose(ws, ws.pending);
    return;
  }
  ws.pending = null;
  ws.busy = true;
  const req = create(PoseSessionRequestSchema, {
    sequence: BigInt(ws.sequence++), pose, deformer: deformer(), outputs: { vertices: true },
  });
  if (ws.first) {
    req.rig = S.rig;
    req.bake = bakeFor();
    probe.sessionBakes.push(req.bake);  // the session's bake: the server takes it from this message only
    ws.first = false;
  }
  ws.sent = pose;
  if (probe.keepSessionFrame) ws.sentJson = toJsonString(PoseSessionRequestSchema, req);
  ws.send(toBinary(PoseSessionRequestSchema, req));
}

// Makes the pose the sliders set the one shown: from the rest pose (every joint at its rest
// transform, every shape at its default weight) when another was.
function toManualPose() {
  if (S.source !== "manual" || !S.manual) {
    S.manual = restTransforms();
    S.shapes = S.full.morphTargets.map((t) => t.defaultWeight);
  }
  S.source = "manual";
  S.playing = false;
  $("play").textContent = "Play";
}

function onJointSlider() {
  if (!S.full) return;
  toManualPose();
  const j = Number($("joint").value);
  const rest = restTransforms()[j];
  const e = new THREE.Euler(THREE.MathUtils.degToRad(+$("rx").value), THREE.MathUtils.degToRad(+$("ry").value),
                            THREE.MathUtils.degToRad(+$("rz").value));
  const q = new THREE.Quaternion(...rest.rotation).multiply(new THREE.Quaternion().setFromEuler(e));
  S.manual[j].rotation = [q.x, q.y, q.z, q.w];
  sendPose(openPoseSession(), currentPose());
}

function onShapeSlider() {
  if (!S.full || !S.full.morphTargets.length) return;
  toManualPose();
  S.shapes[Number($("shape").value)] = Number($("shape-weight").value);
  sendPose(openPoseSession(), currentPose());
}

function closeSockets() {
  for (const ws of [S.poseWs, S.fastWs]) if (ws && ws.readyState <= 1) ws.close(1000);
  S.poseWs = null;
  S.fastWs = null;
}

// ---- Bakes --------------------------------------------------------------------------------
const WEIGHT_BAKES = ["bbw", "boneHeat", "geodesicVoxel"];

async function runBake(method, options) {
  const started = await bakes.startBake({ parent: S.rig, options });
  const name = started.bake.name;
  $("progress").value = 0;
  let last = null;
  // The watch, opened again while the server is away. The bake goes on meanwhile where it runs
  // (a worker on Redis; a server restarted on its own store queues its unfinished bakes again).
  for (let backoff = null, resumed = false; ;) {
    try {
      for await (const b of bakes.watchBake({ name })) {
        backoff = null;
        last = b;
        const f = b.metadata?.progressFraction ?? 0;
        $("progress").value = f;
        probe.progress.push(f);
        say(`Baking ${method}: ${b.metadata?.stage || "queued"} ${(100 * f).toFixed(0)} %`);
      }
      break;
    } catch (e) {
      if (resumed && e instanceof ConnectError && e.code === Code.NotFound)
        throw new Error(`the ${method} bake is gone: the server that answers since the restart does not know it ` +
                        "(without --redis each replica keeps its own queue); start it again");
      if (!wentAway(e)) throw e;
      backoff = await waitToRetry(e, backoff);
      resumed = true;
    }
  }
  if (!last || last.metadata.state !== BakeState.SUCCEEDED) {
    const why = last?.result?.case === "error" ? last.result.value.message : "it did not finish";
    throw new Error(`the ${method} bake failed: ${why}`);
  }
  return name;
}

async function startBake() {
  const method = $("bake-method").value;
  const value = {};
  if (method === "endpoint") value.weightsBake = S.bakes.weights ?? "";
  const options = { method: { case: method, value } };
  try {
    $("bake").disabled = true;
    const name = await runBake(method, options);
    S.bakes[method] = name;
    if (WEIGHT_BAKES.includes(method)) {
      S.bakes.weights = name;
      const w = await bakes.getWeights({ bake: name, format: WeightsFormat.DENSE });
      S.weights = { values: w.weights.kind.value.values, cols: w.weights.kind.value.jointCount };
      $("show-weights").disabled = false;
      S.clipFrames = null;
    }
    probe.bakeName = name;
    probe.bakeDone = true;
    // An open pose or FAST session keeps the bake its first message named: the next frame opens
    // new ones, which name this bake.
    closeSockets();
    say(`The ${method} bake is done: ${name.split("/").pop()}. Poses now use it.`);
    await poseOnce();
  } catch (e) {
    fail(`Baking ${method}`, e);
  } finally {
    $("bake").disabled = false;
  }
}

// ---- Download -----------------------------------------------------------------------------
// The rig as a skinned glTF binary, with the last weights bake's weights (its own influences per
// vertex), else the rig's own: what a rigger takes back to Blender or an engine after baking here.
// Written as skinctl writes one (core/io/gltf_write.cc), so that it registers as the same rig: a
// node per joint (its name and rest transform), a skin of every joint but the chain of unweighted
// non-deforming joints above the skeleton (an exporter's "Z_UP" and "Armature", which the reader
// takes back as non-deforming joints), a mesh and node per part of the rig's mesh (positions,
// normals when it has them, triangles, JOINTS_n/WEIGHTS_n in sets of four, the morph targets that
// move it), and the animations the page has for it (those of the file it registered here). Joints'
// bone tails are not written (glTF has none).
function skinnedGlb(rig, k, joints, weights, clips = []) {
  // A VEC3 accessor's min and max (glTF requires them of positions).
  const bounds = (xyz) => {
    const min = [Infinity, Infinity, Infinity], max = [-Infinity, -Infinity, -Infinity];
    xyz.forEach((x, i) => {
      min[i % 3] = Math.min(min[i % 3], x);
      max[i % 3] = Math.max(max[i % 3], x);
    });
    return { min, max };
  };
  const V = rig.mesh.positions.length / 3;
  const skeleton = rig.skeleton.joints;
  const chunks = [], views = [], accessors = [];
  let length = 0;
  const add = (array, componentType, type, count, extra = {}) => {
    const bytes = new Uint8Array(array.buffer, array.byteOffset, array.byteLength);
    const pad = (4 - (bytes.length % 4)) % 4;
    views.push({ buffer: 0, byteOffset: length, byteLength: bytes.length });
    chunks.push(bytes, new Uint8Array(pad));
    length += bytes.length + pad;
    accessors.push({ bufferView: views.length - 1, componentType, count, type, ...extra });
    return accessors.length - 1;
  };
  const FLOAT = 5126, UNSIGNED_SHORT = 5123, UNSIGNED_INT = 5125;

  // The skin's joints, and each joint's index among them (−1: a plain node).
  const weighted = skeleton.map(() => false);
  weights.forEach((w, i) => { if (w !== 0) weighted[joints[i]] = true; });
  const children = skeleton.map(() => []), roots = [];
  skeleton.forEach((J, j) => (J.parent >= 0 ? children[J.parent] : roots).push(j));
  const plain = skeleton.map(() => false);
  for (let j = roots.length === 1 ? roots[0] : -1;
       j >= 0 && skeleton[j].nonDeforming && !weighted[j] && children[j].length === 1; j = children[j][0]) {
    plain[j] = true;
  }
  const skinJoints = [...skeleton.keys()].filter((j) => !plain[j]);
  const skinIndex = skeleton.map(() => -1);
  skinJoints.forEach((j, s) => { skinIndex[j] = s; });

  // Inverse bind matrices, column-major: the rig's 3x4 row-major ones, or the inverse of the rest
  // pose's world transform where a joint has none.
  const world = restWorlds(skeleton);
  const ibm = new Float32Array(16 * skinJoints.length);
  skinJoints.forEach((j, s) => {
    const b = skeleton[j].inverseBind;
    ibm.set((b.length === 12 ? matrixOfRows(b) : world[j].clone().invert()).elements, 16 * s);  // column-major
  });

  const nodes = skeleton.map((J) => {
    const node = { name: J.name };
    // Only the paths the rig gives (a reader takes the rest as their defaults).
    for (const [path, identity] of TRS) if (J.rest?.[path]?.length === identity.length) node[path] = [...J.rest[path]];
    return node;
  });
  skeleton.forEach((J, j) => { if (J.parent >= 0) (nodes[J.parent].children ??= []).push(j); });

  // A mesh per part: its run of vertices, and the triangles that start in it.
  const parts = rig.mesh.parts.length ? rig.mesh.parts : [{ name: rig.displayName || "character", vertexCount: V }];
  const meshes = [];
  // Each mesh's node and the rig's targets it has, in order (for its weights channels).
  const meshTargets = [];
  const triangles = rig.mesh.triangles;
  let first = 0;
  for (const part of parts) {
    const n = part.vertexCount, end = first + n;
    const positions = Float32Array.from(rig.mesh.positions.slice(3 * first, 3 * end));
    const attributes = { POSITION: add(positions, FLOAT, "VEC3", n, bounds(positions)) };
    if (rig.mesh.normals.length === 3 * V) {
      attributes.NORMAL = add(Float32Array.from(rig.mesh.normals.slice(3 * first, 3 * end)), FLOAT, "VEC3", n);
    }
    for (let set = 0; set * 4 < k; ++set) {
      const J = new Uint16Array(4 * n), W = new Float32Array(4 * n);
      for (let i = 0; i < n; ++i) {
        for (let c = 0; c < 4 && set * 4 + c < k; ++c) {
          const at = (first + i) * k + set * 4 + c;
          W[4 * i + c] = weights[at];
          // An influence of weight 0 names joint 0 (as skinctl writes it).
          J[4 * i + c] = weights[at] !== 0 ? skinIndex[joints[at]] : 0;
        }
      }
      attributes[`JOINTS_${set}`] = add(J, UNSIGNED_SHORT, "VEC4", n);
      attributes[`WEIGHTS_${set}`] = add(W, FLOAT, "VEC4", n);
    }
    const own = [];
    for (let t = 0; t < triangles.length; t += 3) {
      if (triangles[t] >= first && triangles[t] < end) {
        own.push(triangles[t] - first, triangles[t + 1] - first, triangles[t + 2] - first);
      }
    }
    const indices = add(Uint32Array.from(own), UNSIGNED_INT, "SCALAR", own.length);
    // Morph targets: every one on a single part, else those that move this one.
    const targets = [], defaults = [], names = [], rigTargets = [];
    for (const [t, target] of (rig.morphTargets ?? []).entries()) {
      const dV = Float32Array.from(target.positionDeltas.slice(3 * first, 3 * end));
      if (parts.length > 1 && dV.every((d) => d === 0)) continue;
      const moved = { POSITION: add(dV, FLOAT, "VEC3", n, bounds(dV)) };
      if (attributes.NORMAL !== undefined && target.normalDeltas.length === 3 * V) {
        moved.NORMAL = add(Float32Array.from(target.normalDeltas.slice(3 * first, 3 * end)), FLOAT, "VEC3", n);
      }
      targets.push(moved);
      defaults.push(target.defaultWeight);
      names.push(target.name);
      rigTargets.push(t);
    }
    const primitive = { attributes, indices, mode: 4 };
    const mesh = { name: part.name, primitives: [primitive] };
    if (targets.length) {
      primitive.targets = targets;
      mesh.weights = defaults;
      mesh.extras = { targetNames: names };
    }
    meshes.push(mesh);
    nodes.push({ name: part.name, mesh: meshes.length - 1, skin: 0 });
    meshTargets.push({ node: nodes.length - 1, targets: rigTargets });
    first = end;
  }
  // The file's animations as the server sampled them (CreateRig's clips): a LINEAR key per frame
  // for each joint's translation, rotation and scale, but a channel that never leaves the rest
  // value, and, of a clip whose frames set morph weights, for each mesh's targets' weights.
  const animations = [];
  for (const clip of clips) {
    const F = clip.poses.length;
    if (!F || !(clip.framesPerSecond > 0)) continue;
    const times = Float32Array.from({ length: F }, (_, f) => clip.start + f / clip.framesPerSecond);
    // The reader samples floor(length · rate) + 1 frames: the last key, rounded to a float, moves up
    // until the length holds them all again.
    const bits = new Uint32Array(times.buffer);
    const short = () => (times[F - 1] - times[0]) * clip.framesPerSecond + 1e-9 < F - 1;
    for (let n = 0; n < 64 && times[F - 1] > 0 && short(); ++n) ++bits[F - 1];
    let input = -1;
    const samplers = [], channels = [];
    const channel = (node, path, values, type, count) => {
      if (input < 0) input = add(times, FLOAT, "SCALAR", F, { min: [times[0]], max: [times[F - 1]] });
      samplers.push({ input, output: add(values, FLOAT, type, count), interpolation: "LINEAR" });
      channels.push({ sampler: samplers.length - 1, target: { node, path } });
    };
    skeleton.forEach((J, j) => {
      for (const [path, identity] of TRS) {
        const width = identity.length;
        const values = new Float32Array(F * width);
        clip.poses.forEach((pose, f) => {
          const v = pose.joints[j]?.[path];
          values.set(v?.length === width ? v : identity, f * width);
        });
        const rest = Float32Array.from(restValue(J, path, identity));
        if (values.every((x, i) => x === rest[i % width])) continue;
        channel(j, path, values, width === 4 ? "VEC4" : "VEC3", F);
      }
    });
    // A frame's weights are one per rig target (a frame without them: the targets' defaults).
    if (clip.poses.some((pose) => pose.morphWeights.length)) {
      for (const { node, targets } of meshTargets) {
        if (!targets.length) continue;
        const values = new Float32Array(F * targets.length);
        clip.poses.forEach((pose, f) => targets.forEach((t, c) => {
          const w = pose.morphWeights;
          values[f * targets.length + c] = w.length ? w[t] : rig.morphTargets[t].defaultWeight;
        }));
        channel(node, "weights", values, "SCALAR", F * targets.length);
      }
    }
    if (channels.length) animations.push({ name: clip.name, samplers, channels });
  }
  const doc = {
    asset: { version: "2.0", generator: "skinning viewer" },
    scene: 0,
    scenes: [{ nodes: roots.concat([...meshes.keys()].map((m) => skeleton.length + m)) }],
    nodes,
    meshes,
    skins: [{ joints: skinJoints, inverseBindMatrices: add(ibm, FLOAT, "MAT4", skinJoints.length) }],
    accessors, bufferViews: views, buffers: [{ byteLength: length }],
  };
  if (animations.length) doc.animations = animations;
  return writeGlb(doc, chunks);
}

// Dense weights as the 4 largest of each vertex (ties: the lower joint), negatives as 0, scaled
// to sum to 1: what skinctl writes for a rig of dense weights (TopK in core/skinning/weights.h).
function topFour({ jointCount, values }) {
  const k = Math.min(4, jointCount), V = values.length / jointCount;
  const joints = new Int32Array(V * k), weights = new Float32Array(V * k);
  const order = [...Array(jointCount).keys()];
  for (let i = 0; i < V; ++i) {
    const w = (j) => values[i * jointCount + j];
    const top = order.slice().sort((a, b) => w(b) - w(a) || a - b).slice(0, k);
    let sum = 0;
    for (const j of top) sum += Math.max(0, w(j));
    top.forEach((j, c) => {
      joints[i * k + c] = j;
      weights[i * k + c] = sum > 0 ? Math.max(0, w(j)) / sum : 0;
    });
  }
  return { influenceCount: k, joints, weights };
}

async function downloadGlb() {
  try {
    const rig = S.full;
    let sparse, from;
    if (S.bakes.weights) {
      const w = await bakes.getWeights({ bake: S.bakes.weights, format: WeightsFormat.SPARSE });
      sparse = w.weights.kind.value;
      from = S.bakes.weights.split("/").pop();
    } else if (rig.weights?.kind?.case === "sparse") {
      sparse = rig.weights.kind.value;
      from = "its own weights";
    } else if (rig.weights?.kind?.case === "dense") {
      sparse = topFour(rig.weights.kind.value);
      from = "its own weights, the 4 largest of each vertex";
    } else {
      throw new Error("the rig has no weights to write: bake some first (Start bake)");
    }
    const bytes = skinnedGlb(rig, sparse.influenceCount, sparse.joints, sparse.weights, S.clips);
    const file = `${rig.displayName || "character"}${S.bakes.weights ? "-" + from : ""}.glb`;
    const a = document.createElement("a");
    a.href = URL.createObjectURL(new Blob([bytes], { type: "model/gltf-binary" }));
    a.download = file;
    a.click();
    setTimeout(() => URL.revokeObjectURL(a.href), 60000);
    probe.downloaded = file;
    say(`Saved ${file} (${(bytes.length / 1024).toFixed(0)} KiB, ${sparse.influenceCount} influences per vertex, ` +
        `from ${from}).`);
  } catch (e) {
    fail("Writing the rig as .glb", e);
  }
}

function showWeights() {
  const on = $("show-weights").checked && S.weights;
  material.vertexColors = !!on;
  material.color.set(on ? 0xffffff : 0xd0b090);
  material.needsUpdate = true;
  if (!on) return;
  const j = Number($("joint").value);
  const colors = mesh.geometry.attributes.color;
  const n = colors.count, cols = S.weights.cols;
  for (let i = 0; i < n; ++i) {
    const w = Math.min(1, Math.max(0, S.weights.values[i * cols + j]));
    // Blue (0) through green to red (1).
    const c = new THREE.Color().setHSL((1 - w) * 0.66, 0.9, 0.5);
    colors.setXYZ(i, c.r, c.g, c.b);
  }
  colors.needsUpdate = true;
}

// ---- FAST handles -------------------------------------------------------------------------
async function startFast() {
  try {
    $("fast").disabled = true;
    if (!S.full.influenceCount && !S.bakes.weights)
      throw new Error("FAST needs weights: bake some first (Start bake)");
    S.fastBake = await runBake("fast_model", { method: { case: "fastModel", value: { weightsBake: S.bakes.weights ?? "" } } });
    openFastSession(null);
    say("FAST model ready: drag a handle (the spheres) with the mouse or a finger.");
  } catch (e) {
    fail("FAST", e);
  } finally {
    $("fast").disabled = false;
  }
}

// The FAST session (`reopen` null), or a new one for a session whose server went away
// (SERVER_WENT_AWAY): it starts from the drag the old one had not answered, or its last one, so
// the character keeps its pose. The model (S.fastBake) is a stored bake, so any replica serves it.
function openFastSession(reopen) {
  const ws = new WebSocket(sessionUrl("/skinning.v1.FastService/SolveSession"));
  ws.binaryType = "arraybuffer";
  ws.sequence = 0;
  ws.busy = false;
  ws.pending = null;
  ws.reopen = reopen;
  ws.framed = reopen?.framed ?? false;
  S.fastWs = ws;
  ws.onopen = () => solve(reopen?.drag ?? null);
  ws.onmessage = (ev) => {
    const res = fromBinary(SolveSessionResponseSchema, new Uint8Array(ev.data));
    S.solution = res.solution;
    if (res.solution.vertices.length) {
      if (!ws.framed) fitCamera(res.solution.vertices);
      ws.framed = true;
      showVertices(res.solution.vertices);
    }
    placeHandles();
    if (ws.lastDrag) {
      const h = S.handles.findIndex((x) => x.joint === ws.lastDrag.joint);
      probe.fast = { ...ws.lastDrag, transform: Array.from(res.solution.transforms.slice(12 * h, 12 * h + 12)) };
    }
    probe.fastReady = true;
    probe.fastFrames++;
    if (ws.reopen) say("Connected to the server again.");
    ws.reopen = null;
    ws.busy = false;
    if (ws.pending) solve(ws.pending);
  };
  ws.onclose = (ev) => {
    if (SERVER_WENT_AWAY.has(ev.code)) return reopenFastSession(ws, closeReason(ev));
    if (ev.code >= 4000 || ev.code === 1008) fail("The FAST session", { message: `closed: ${ev.reason}` });
  };
  return ws;
}

function reopenFastSession(old, reason) {
  if (S.fastWs !== old) return;  // closed on purpose (another rig)
  scheduleReopen("The FAST session", old.reopen, (next) => {
    if (S.fastWs !== old) return;
    // Drags made while it was away wait on the old socket (solve keeps the last).
    const drag = old.pending ?? old.lastDrag ?? old.reopen?.drag ?? null;
    openFastSession({ ...next, drag, framed: old.framed });
  }, reason);
}

// The fixed handle: the first root joint among the handles.
function fixedJoint() {
  const joints = S.full.skeleton.joints;
  const roots = S.handles.filter((h) => joints[h.joint].parent < 0);
  return (roots[0] ?? S.handles[0])?.joint;
}

function solve(drag) {
  const ws = S.fastWs;
  if (!ws) return;
  if (ws.readyState !== 1 || ws.busy) {
    ws.pending = drag;
    return;
  }
  ws.busy = true;
  ws.pending = null;
  const constraints = [];
  const fixed = S.handles.length ? fixedJoint() : 0;
  if (!drag || drag.joint !== fixed)
    constraints.push({ joint: fixed, kind: HandleConstraint_Kind.TRANSFORM, target: [1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0] });
  if (drag) constraints.push({ joint: drag.joint, kind: HandleConstraint_Kind.POSITION, point: drag.point, target: drag.target });
  ws.lastDrag = drag;
  const req = create(SolveSessionRequestSchema, { sequence: BigInt(ws.sequence++), constraints, outputs: { vertices: true } });
  if (ws.sequence === 1) req.bake = S.fastBake;
  ws.send(toBinary(SolveSessionRequestSchema, req));
}

function placeHandles() {
  const sol = S.solution;
  if (!sol) return;
  if (S.handles.length !== sol.handleJoints.length) {
    handleGroup.clear();
    S.handles = sol.handleJoints.map((joint) => {
      const sphere = new THREE.Mesh(new THREE.SphereGeometry(S.diag * 0.015, 16, 8),
                                    new THREE.MeshBasicMaterial({ color: 0x2255ff, depthTest: false }));
      sphere.renderOrder = 1;
      handleGroup.add(sphere);
      return { joint, sphere, point: S.jointWorld[joint].clone() };
    });
  }
  S.handles.forEach((h, i) => {
    const t = sol.transforms.slice(12 * i, 12 * i + 12);
    const p = h.point;
    h.sphere.position.set(t[0] * p.x + t[1] * p.y + t[2] * p.z + t[3], t[4] * p.x + t[5] * p.y + t[6] * p.z + t[7],
                          t[8] * p.x + t[9] * p.y + t[10] * p.z + t[11]);
  });
}

const raycaster = new THREE.Raycaster();
let dragging = null;
function pointerRay(ev) {
  const r = canvas.getBoundingClientRect();
  raycaster.setFromCamera(new THREE.Vector2(((ev.clientX - r.left) / r.width) * 2 - 1, -((ev.clientY - r.top) / r.height) * 2 + 1), camera);
}
// Where a point of the scene is on the screen, in CSS pixels of the viewport (as a pointer
// event's clientX and clientY).
function toScreen(p) {
  const v = p.clone().project(camera);
  const r = canvas.getBoundingClientRect();
  return { x: r.left + ((v.x + 1) / 2) * r.width, y: r.top + ((1 - v.y) / 2) * r.height };
}
// The handle a pointer lands on: the sphere its ray hits or, for a finger (a fingertip covers
// far more than a handle's few pixels), the handle nearest to it within 24 CSS px.
function handleAt(ev) {
  pointerRay(ev);
  const hit = raycaster.intersectObjects(S.handles.map((h) => h.sphere))[0];
  if (hit) return S.handles.find((h) => h.sphere === hit.object);
  if (ev.pointerType !== "touch") return null;
  let nearest = null, reach = 24;
  for (const h of S.handles) {
    const p = toScreen(h.sphere.position);
    const d = Math.hypot(p.x - ev.clientX, p.y - ev.clientY);
    if (d < reach) [nearest, reach] = [h, d];
  }
  return nearest;
}
canvas.addEventListener("pointerdown", (ev) => {
  if (!S.handles.length) return;
  const handle = handleAt(ev);
  if (!handle) return;
  const normal = camera.getWorldDirection(new THREE.Vector3());
  const plane = new THREE.Plane().setFromNormalAndCoplanarPoint(normal, handle.sphere.position.clone());
  // The handle keeps its offset from the pointer (it does not jump under a finger beside it).
  const at = raycaster.ray.intersectPlane(plane, new THREE.Vector3());
  dragging = { handle, plane, grab: at ? at.sub(handle.sphere.position) : new THREE.Vector3() };
  controls.enabled = false;
  canvas.setPointerCapture(ev.pointerId);
});
canvas.addEventListener("pointermove", (ev) => {
  if (!dragging) return;
  pointerRay(ev);
  const target = raycaster.ray.intersectPlane(dragging.plane, new THREE.Vector3());
  if (!target) return;
  target.sub(dragging.grab);
  const p = dragging.handle.point;
  solve({ joint: dragging.handle.joint, point: [p.x, p.y, p.z], target: [target.x, target.y, target.z] });
});
// A drag ends when the pointer goes up or the browser cancels it (a system gesture on a phone).
for (const end of ["pointerup", "pointercancel"]) {
  canvas.addEventListener(end, () => {
    dragging = null;
    controls.enabled = true;
  });
}

// Where handle `i` is on the screen and its sphere's radius there (CSS pixels), for tests.
probe.handleScreen = (i) => {
  const h = S.handles[i];
  if (!h) return null;
  const c = toScreen(h.sphere.position);
  const right = new THREE.Vector3().setFromMatrixColumn(camera.matrixWorld, 0);
  const edge = toScreen(h.sphere.position.clone().addScaledVector(right, h.sphere.geometry.parameters.radius));
  return { ...c, r: Math.hypot(edge.x - c.x, edge.y - c.y), joint: h.joint };
};
probe.cameraPosition = () => camera.position.toArray();
// The drawing buffer's size in device pixels, for tests.
probe.bufferSize = () => [renderer.getContext().drawingBufferWidth, renderer.getContext().drawingBufferHeight];
// Every 7th pixel's RGBA of the last drawn frame, for tests.
probe.pixels = () => {
  const gl = renderer.getContext();
  const w = gl.drawingBufferWidth, h = gl.drawingBufferHeight;
  const data = new Uint8Array(w * h * 4);
  gl.readPixels(0, 0, w, h, gl.RGBA, gl.UNSIGNED_BYTE, data);
  const out = [];
  for (let i = 0; i < data.length; i += 28) out.push(data[i], data[i + 1], data[i + 2]);
  return out;
};

// ---- Wiring -------------------------------------------------------------------------------
$("file").addEventListener("change", (ev) => ev.target.files.length && register([...ev.target.files]));
const drop = $("drop");
drop.addEventListener("dragover", (ev) => { ev.preventDefault(); drop.classList.add("over"); });
drop.addEventListener("dragleave", () => drop.classList.remove("over"));
drop.addEventListener("drop", (ev) => {
  ev.preventDefault();
  drop.classList.remove("over");
  if (ev.dataTransfer.files.length) register([...ev.dataTransfer.files]);
});
$("scene").addEventListener("change", () => S.upload && sendCharacter(S.upload, Number($("scene").value)));
$("rigs").addEventListener("change", async () => {
  showScenes(null);  // the chooser is of the last file's scenes, not of a rig from the list
  const name = $("rigs").value;
  // With the animations stored with it (those of the files it was registered from).
  try { await openRig(name, (await rigs.getAnimations({ rig: name })).animations); } catch (e) {
    fail("Opening the rig", e);
  }
});
$("method").addEventListener("change", async () => {
  S.clipFrames = null;
  if (S.poseWs) closeSockets();
  if (S.playing) await loadClip();
  await poseOnce();
});
$("animation").addEventListener("change", () => { S.clipFrames = null; S.frame = 0; });
$("play").addEventListener("click", togglePlay);
$("frame").addEventListener("input", async () => {
  S.playing = false;
  $("play").textContent = "Play";
  if (await loadClip()) showFrame(Number($("frame").value));
});
for (const id of ["rx", "ry", "rz"]) $(id).addEventListener("input", onJointSlider);
$("joint").addEventListener("change", () => { for (const id of ["rx", "ry", "rz"]) $(id).value = "0"; showWeights(); });
$("rest").addEventListener("click", async () => {
  S.source = "rest";
  S.manual = null;
  S.shapes = null;
  showShapeWeight();
  await poseOnce();
});
$("shape").addEventListener("change", showShapeWeight);
$("delete-rig").addEventListener("click", deleteRig);
$("shape-weight").addEventListener("input", onShapeSlider);
$("bake").addEventListener("click", startBake);
$("show-weights").addEventListener("change", showWeights);
$("fast").addEventListener("click", startFast);
$("download").addEventListener("click", downloadGlb);

function loop(now) {
  resize();
  if (S.playing && S.clipFrames) {
    const clip = S.clips[Number($("animation").value)];
    // rAF's time may be a little before the performance.now() that started playing.
    const n = S.clipFrames.length;
    const f = Math.floor(Math.max(0, (now - S.playStart) / 1000) * clip.framesPerSecond) % n;
    if (f !== S.frame || S.source !== "clip") showFrame(f);
  }
  controls.update();
  renderer.render(scene, camera);
  requestAnimationFrame(loop);
}
requestAnimationFrame(loop);

listRigs()
  .then(() => {
    say("Choose a rig, or drop a .glb or .vrm (or a .gltf with its .bin files) to register it.");
    probe.ready = true;
  })
  .catch((e) => fail("Listing the rigs", e));
