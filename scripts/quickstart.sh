#!/usr/bin/env bash
# The main job: install, build, start the server on its embedded store, register the bundled
# CesiumMan through skinctl, pose its walk at several times with LBS and DQS, write the posed
# meshes (glTF and OBJ) to ./out, and stop the server. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh skinning-server skinctl

OUT=${OUT:-out}
STORE="$OUT/store"
mkdir -p "$OUT"
LOG="$OUT/server.log"
./build/server/skinning-server --address=127.0.0.1:0 --metrics_address=127.0.0.1:0 --http_address=127.0.0.1:0 \
  --store_dir="$STORE" >"$LOG" 2>&1 &
SERVER_PID=$!
trap 'kill -TERM $SERVER_PID 2>/dev/null || true' EXIT
PORT=""
for _ in $(seq 1 100); do
  PORT=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' "$LOG")
  [ -n "$PORT" ] && break
  kill -0 $SERVER_PID 2>/dev/null || { cat "$LOG"; exit 1; }
  sleep 0.1
done
[ -n "$PORT" ] || { echo "server did not start"; cat "$LOG"; exit 1; }
HTTP_PORT=""
for _ in $(seq 1 50); do
  HTTP_PORT=$(sed -n 's/.*http on port \([0-9]*\).*/\1/p' "$LOG")
  [ -n "$HTTP_PORT" ] && break
  sleep 0.1
done
echo "server pid $SERVER_PID on 127.0.0.1:$PORT (gRPC), store $STORE"
echo "viewer (the HTTP front door) while this runs: http://127.0.0.1:$HTTP_PORT/"

SKINCTL="./build/client/skinctl --server=127.0.0.1:$PORT"
RIG=$($SKINCTL register --gltf=samples/CesiumMan/CesiumMan.glb --name=CesiumMan)
echo "rig: $RIG"
$SKINCTL list
$SKINCTL pose --rig="$RIG" --gltf=samples/CesiumMan/CesiumMan.glb --times=0,0.25,0.5,1.0,1.5 \
  --method=lbs,dqs --format=glb,obj --out="$OUT/posed"
# Bake automatic weights (bounded biharmonic) on the server, with progress on stderr, and pose the
# same animation with them. The bake is a job keyed by rig and options: run again, it is reused.
# Given the file (the same rig), the baked .glb also carries the file's walk, to play anywhere.
BAKE=$($SKINCTL bake --gltf=samples/CesiumMan/CesiumMan.glb --name=CesiumMan --bake_method=bbw --out="$OUT/bake" |
  awk 'NR == 1 {print $1}')
echo "bake: $BAKE (weights in $OUT/bake)"
$SKINCTL pose --rig="$RIG" --bake="$BAKE" --gltf=samples/CesiumMan/CesiumMan.glb --times=0,0.25,0.5,1.0,1.5 \
  --method=lbs,dqs --format=glb,obj --out="$OUT/posed-bbw"

# The same rig through the HTTP front door (Connect JSON), as a browser or a phone would call it.
echo "HTTP front door: POST http://127.0.0.1:$HTTP_PORT/skinning.v1.RigService/GetRig"
curl -sS -X POST -H 'Content-Type: application/json' -d "{\"name\": \"$RIG\"}" \
  "http://127.0.0.1:$HTTP_PORT/skinning.v1.RigService/GetRig"
echo

kill -TERM $SERVER_PID
wait $SERVER_PID
trap - EXIT
echo "server stopped cleanly; posed meshes are in $OUT/posed (the file's weights) and $OUT/posed-bbw (baked)"
echo "to browse them: ./build/server/skinning-server --store_dir=$STORE --http_address=127.0.0.1:8080, then open http://127.0.0.1:8080/"
