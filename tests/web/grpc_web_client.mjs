// An independent gRPC-Web client against the real server: connect-web's gRPC-Web transport
// (createGrpcWebTransport, the library the viewer uses for Connect; its gRPC-Web side is what
// web apps that talk to Envoy-fronted gRPC servers use) in Node, in both of its formats (binary
// protobuf and JSON). It calls a unary method, one that fails and the server stream WatchBake,
// and writes what it received to OUT/result.json, each answer as the base64 of its binary form;
// tests/e2e/http_grpc_web_test.cc compares them with the gRPC answers.
//
//   node tests/web/grpc_web_client.mjs --url=http://127.0.0.1:PORT --pose=BASE64_POSE_REQUEST
//       --bake=rigs/…/bakes/… --out=DIR
import { args, result, save } from "./harness.mjs";

// The viewer's own packages (web/node_modules, installed by scripts/install-deps.sh) and the
// generated code that goes with them.
const web = new URL("../../web/", import.meta.url);
const load = (path) => import(new URL(path, web));
const { createClient, ConnectError } = await load("node_modules/@connectrpc/connect/dist/esm/index.js");
const { createGrpcWebTransport } = await load("node_modules/@connectrpc/connect-web/dist/esm/index.js");
const { fromBinary, toBinary } = await load("node_modules/@bufbuild/protobuf/dist/esm/index.js");
const { PoseService, PoseRequestSchema, PoseResponseSchema } = await load("gen/skinning/v1/pose_service_pb.js");
const { RigService } = await load("gen/skinning/v1/rig_service_pb.js");
const { BakeService } = await load("gen/skinning/v1/bake_service_pb.js");
const { BakeSchema } = await load("gen/skinning/v1/bake_pb.js");

const b64 = (bytes) => Buffer.from(bytes).toString("base64");
try {
  const pose = fromBinary(PoseRequestSchema, Buffer.from(args.pose, "base64"));
  for (const format of ["binary", "json"]) {
    const transport = createGrpcWebTransport({ baseUrl: args.url, useBinaryFormat: format === "binary" });
    const out = (result[format] = {});
    out.pose = b64(toBinary(PoseResponseSchema, await createClient(PoseService, transport).pose(pose)));
    try {
      await createClient(RigService, transport).getRig({ name: "rigs/rig-nope%é" });
      out.badName = { code: "none" };
    } catch (e) {
      const err = ConnectError.from(e);
      out.badName = { code: err.code, message: err.rawMessage };
    }
    out.watch = [];
    for await (const bake of createClient(BakeService, transport).watchBake({ name: args.bake }))
      out.watch.push(b64(toBinary(BakeSchema, bake)));
    save();
  }
} catch (e) {
  result.failure = String(e?.stack ?? e);
}
save();
