#!/usr/bin/env bash
# Installs the Debian 12 packages the project builds and tests with, and the npm-registry tools
# of tests/package.json. Idempotent: does nothing when everything is already installed.
#   bash scripts/install-deps.sh               # everything: build, tests, benchmarks, the viewer
#   bash scripts/install-deps.sh --build-only  # what building skinning-server and skinctl needs,
#                                              # no npm (the container image's build stage)
set -euo pipefail
cd "$(dirname "$0")/.."
MODE=${1:-all}
case $MODE in
  all | --build-only) ;;
  *) echo "usage: install-deps.sh [--build-only]" >&2; exit 2 ;;
esac
# What building the two programs needs (CMakeLists.txt's find_package list).
PACKAGES=(
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler libeigen3-dev
  libsuitesparse-dev libabsl-dev prometheus-cpp-dev libtinygltf-dev libhiredis-dev nlohmann-json3-dev
  libcivetweb-dev libssl-dev libboost-dev zlib1g-dev libopenblas0-pthread pkg-config cmake ninja-build
  ccache g++ libmeshoptimizer-dev libdraco-dev
)
# What the tests, benchmarks and deploy checks add.
if [ "$MODE" = all ]; then
  PACKAGES+=(libgtest-dev libgmock-dev libbenchmark-dev redis-server openssl chromium curl git kubernetes-client
    python3-yaml gltfpack)
fi
missing=()
for p in "${PACKAGES[@]}"; do
  # Any kubectl already installed (e.g. Google Cloud SDK's `kubectl` package, which owns
  # /usr/bin/kubectl and conflicts with kubernetes-client) serves the deploy render test.
  [ "$p" = kubernetes-client ] && command -v kubectl >/dev/null && continue
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node.js and npm for the npm-registry tools (tests/package.json); any installed npm will do.
[ "$MODE" = all ] && ! command -v npm >/dev/null && missing+=(nodejs npm)
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
else
  echo "install-deps: installing ${missing[*]}"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
[ "$MODE" = --build-only ] && exit 0

# The test tools from the npm registry, pinned by tests/package-lock.json; npm ci runs only when
# the lock file changed since the last install.
if [ ! -f tests/node_modules/.package-lock.json ] || [ tests/package-lock.json -nt tests/node_modules/.package-lock.json ]; then
  echo "install-deps: npm ci in tests/"
  (cd tests && npm ci --no-audit --no-fund --loglevel=error)
fi

# The browser viewer (web/): its npm packages pinned by web/package-lock.json, then the types
# generated from proto/ and the bundle that the front door serves (web/dist). The bundle is
# rebuilt when a source, a proto or the lock file is newer than it.
if [ ! -f web/node_modules/.package-lock.json ] || [ web/package-lock.json -nt web/node_modules/.package-lock.json ]; then
  echo "install-deps: npm ci in web/"
  (cd web && npm ci --no-audit --no-fund --loglevel=error)
fi
if [ ! -f web/dist/viewer.js ] || [ -n "$(find web/src web/index.html web/package-lock.json web/buf.gen.yaml proto/skinning/v1 -newer web/dist/viewer.js 2>/dev/null | head -1)" ]; then
  echo "install-deps: building the viewer (web/dist)"
  (cd web && rm -rf gen && npm run --silent generate && npm run --silent build)
fi
