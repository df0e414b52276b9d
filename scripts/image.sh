#!/usr/bin/env bash
# Builds the server image (deploy/Dockerfile) with a container engine and checks that it serves:
# the programs start as uid 10001, the server answers on the published gRPC port, skinctl in
# the image registers the bundled CesiumMan, bakes bone heat weights and poses the walk with them,
# the store on the /data volume outlives the container, and a stop (SIGTERM) drains and exits 0.
# Run by hand (it builds everything inside the image: about 20 minutes on 2 cores), not by CTest.
#   bash scripts/image.sh                # docker, else podman; the base images from their registry
#   bash scripts/image.sh --local-base   # first makes debian:12 and debian:12-slim locally from
#                                        # Debian's archive (debootstrap --variant=minbase), for a
#                                        # machine that reaches Debian's mirror but no registry
# Environment: ENGINE (the engine command, e.g. "podman --runtime runc"), BUILD_ARGS and RUN_ARGS
# (extra arguments of its build and run, e.g. "--ulimit nofile=20000:20000" where the engine's
# default limits are over the machine's), TAG (skinning-server:0.1.0), OUT (out/image-check).
set -euo pipefail
cd "$(dirname "$0")/.."
LOCAL_BASE=false
case ${1:-} in
  "") ;;
  --local-base) LOCAL_BASE=true ;;
  *) echo "usage: image.sh [--local-base]" >&2; exit 2 ;;
esac
ENGINE=${ENGINE:-$(command -v docker || command -v podman || true)}
[ -n "$ENGINE" ] || { echo "image.sh: no container engine (docker or podman) found; set ENGINE" >&2; exit 1; }
TAG=${TAG:-skinning-server:0.1.0}
OUT=$(realpath -m "${OUT:-out/image-check}")
read -r -a BUILD_EXTRA <<<"${BUILD_ARGS:-}"
read -r -a RUN_EXTRA <<<"${RUN_ARGS:-}"
NAME=skinning-image-check-$$
VOLUME=skinning-image-check-$$
cleanup() {
  $ENGINE rm -f "$NAME" >/dev/null 2>&1 || true
  $ENGINE volume rm -f "$VOLUME" >/dev/null 2>&1 || true
}
trap cleanup EXIT

if $LOCAL_BASE; then
  # The Dockerfile's two bases, made from Debian 12's archive. Docker Hub's debian images are
  # built the same way (debuerreotype, minbase); -slim also drops documentation, which only
  # makes the runtime stage a little larger here.
  for base in debian:12 debian:12-slim; do
    if $ENGINE image inspect "$base" >/dev/null 2>&1; then continue; fi
    ROOTFS=$(mktemp -d)
    command -v debootstrap >/dev/null || { echo "image.sh: --local-base needs debootstrap (apt-get install debootstrap)" >&2; exit 1; }
    echo "image.sh: making $base with debootstrap"
    debootstrap --variant=minbase bookworm "$ROOTFS" http://deb.debian.org/debian >/dev/null
    tar -C "$ROOTFS" -c . | $ENGINE import - "$base" >/dev/null
    rm -rf "$ROOTFS"
  done
fi

START=$(date +%s)
$ENGINE build "${BUILD_EXTRA[@]}" -f deploy/Dockerfile -t "$TAG" .
echo "image.sh: built $TAG in $(($(date +%s) - START)) s"
$ENGINE image inspect --format '{{.Size}}' "$TAG" | awk '{printf "image.sh: image size %.0f MB\n", $1 / 1e6}'

# The programs load every library they link (a missing one ends them before main), and they are
# a Release build of this checkout's version (CMakeLists.txt's project()).
VERSION=$(sed -n 's/^project(skinning VERSION \([^ ]*\) .*/\1/p' CMakeLists.txt)
for program in skinning-server skinctl; do
  SAID=$($ENGINE run --rm "${RUN_EXTRA[@]}" --entrypoint "/usr/local/bin/$program" "$TAG" --version)
  case $SAID in
    "$program $VERSION (Release build;"*) echo "image.sh: $SAID" ;;
    *) echo "image.sh: $program --version says '$SAID', not version $VERSION, Release build" >&2; exit 1 ;;
  esac
done
USER_ID=$($ENGINE run --rm "${RUN_EXTRA[@]}" --entrypoint id "$TAG" -u)
[ "$USER_ID" = 10001 ] || { echo "image.sh: runs as uid $USER_ID, not 10001" >&2; exit 1; }

# Serves on the published port, its store on a named volume. The client is skinctl from the same
# image in a second container on the host's network, so it reaches the server the way any outside
# client does; it reads the sample and writes its results through bind mounts, as this user.
# start_server [ARG...]: the arguments replace the image's CMD.
start_server() {
  $ENGINE run -d --name "$NAME" "${RUN_EXTRA[@]}" -v "$VOLUME:/data" -p 127.0.0.1::50051 -p 127.0.0.1::8080 \
    -v "$(pwd)/deploy/k8s/base/base.flags:/etc/skinning/flags/base.flags:ro" \
    -v "$(pwd)/deploy/k8s/overlays/dev/overlay.flags:/etc/skinning/flags/overlay.flags:ro" "$TAG" "$@" >/dev/null
  # (Output is read into a variable before grep: with pipefail, `grep -q` closing the pipe early
  # would fail the pipeline through the writer's SIGPIPE.)
  local log=""
  for _ in $(seq 1 100); do
    log=$($ENGINE logs "$NAME" 2>&1)
    grep -q "listening on port" <<<"$log" && break
    [ "$($ENGINE inspect --format '{{.State.Running}}' "$NAME")" = true ] || break
    sleep 0.1
  done
  if ! grep -q "listening on port" <<<"$log"; then
    echo "$log" >&2
    echo "image.sh: the server did not start" >&2
    exit 1
  fi
  PUBLISHED=$($ENGINE port "$NAME" 50051 | head -1)
  PUBLISHED_HTTP=$($ENGINE port "$NAME" 8080 | head -1)
}
stop_server() {
  $ENGINE stop -t 30 "$NAME" >/dev/null
  local code
  code=$($ENGINE inspect --format '{{.State.ExitCode}}' "$NAME")
  $ENGINE logs "$NAME" >"$OUT/server-$1.log" 2>&1
  $ENGINE rm "$NAME" >/dev/null
  [ "$code" = 0 ] || { echo "image.sh: the server exited $code on stop (log: $OUT/server-$1.log)" >&2; exit 1; }
}
skinctl() {
  $ENGINE run --rm "${RUN_EXTRA[@]}" --network=host --user "$(id -u):$(id -g)" \
    -v "$(pwd)/samples/CesiumMan:/in:ro" -v "$OUT:/out" --entrypoint /usr/local/bin/skinctl "$TAG" \
    --server="$PUBLISHED" "$@"
}

rm -rf "$OUT"
mkdir -p "$OUT"
start_server
echo "image.sh: serving on $PUBLISHED"
RIG=$(skinctl register --gltf=/in/CesiumMan.glb --name=CesiumMan)
BAKE=$(skinctl bake --rig="$RIG" --bake_method=bbw --out=/out/bake 2>/dev/null | awk 'NR == 1 {print $1}')
skinctl pose --rig="$RIG" --bake="$BAKE" --gltf=/in/CesiumMan.glb --times=0,0.5,1.0 --method=lbs,dqs \
  --format=glb --out=/out/posed >/dev/null
POSED=$(find "$OUT/posed" -name '*.glb' | wc -l)
[ "$POSED" = 6 ] || { echo "image.sh: $POSED posed files, expected 6" >&2; exit 1; }
stop_server first

# The rig and its bake are still there for a new container on the same volume: a bake is a job
# keyed by rig and options, so asking for it again answers the stored one. This container runs
# as the Kubernetes Deployment runs it (deploy/k8s/base/deployment.yaml: the flags files of the
# base and the dev overlay), so the HTTP front door is on too: its health and a Connect call.
start_server --flagfile=/etc/skinning/flags/base.flags --flagfile=/etc/skinning/flags/overlay.flags
HEALTH=$(curl -sS "http://$PUBLISHED_HTTP/healthz")
[ "$HEALTH" = ok ] || { echo "image.sh: /healthz answered '$HEALTH'" >&2; exit 1; }
GOT=$(curl -sS -X POST -H 'Content-Type: application/json' -d "{\"name\": \"$RIG\"}" \
  "http://$PUBLISHED_HTTP/skinning.v1.RigService/GetRig")
grep -q "\"name\": *\"$RIG\"" <<<"$GOT" || { echo "image.sh: GetRig over HTTP answered: ${GOT:0:300}" >&2; exit 1; }
LISTED=$(skinctl list)
grep -q "$RIG" <<<"$LISTED" || { echo "image.sh: $RIG is gone after a restart" >&2; exit 1; }
AGAIN=$(skinctl bake --rig="$RIG" --bake_method=bbw --nowait 2>&1)
grep -q "found bake $BAKE (succeeded)" <<<"$AGAIN" || { echo "image.sh: after a restart: $AGAIN" >&2; exit 1; }
stop_server second
echo "image.sh: $TAG serves: $RIG baked ($BAKE) and posed ($POSED files in $OUT/posed), kept across a restart under the Deployment's flags (HTTP front door answering), stopped with exit 0"
