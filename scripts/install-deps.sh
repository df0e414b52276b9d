#!/usr/bin/env bash
# Installs the Debian 12 packages the project builds and tests with, and the npm-registry tools
# of tests/package.json. Idempotent: does nothing when everything is already installed.
set -euo pipefail
cd "$(dirname "$0")/.."
PACKAGES=(
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler libeigen3-dev
  libsuitesparse-dev libabsl-dev prometheus-cpp-dev libgtest-dev libgmock-dev libbenchmark-dev
  libtinygltf-dev libhiredis-dev redis-server nlohmann-json3-dev libcivetweb-dev libssl-dev
  libboost-dev zlib1g-dev chromium curl libopenblas0-pthread pkg-config cmake ninja-build ccache g++ git kubernetes-client python3-yaml
  gltfpack libmeshoptimizer-dev libdraco-dev
)
missing=()
for p in "${PACKAGES[@]}"; do
  # Any kubectl already installed (e.g. Google Cloud SDK's `kubectl` package, which owns
  # /usr/bin/kubectl and conflicts with kubernetes-client) serves the deploy render test.
  [ "$p" = kubernetes-client ] && command -v kubectl >/dev/null && continue
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node.js and npm for the npm-registry tools (tests/package.json); any installed npm will do.
command -v npm >/dev/null || missing+=(nodejs npm)
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
else
  echo "install-deps: installing ${missing[*]}"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

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
if [ ! -f web/dist/viewer.js ] || [ -n "$(find web/src web/index.html web/package-lock.json proto/skinning/v1 -newer web/dist/viewer.js 2>/dev/null | head -1)" ]; then
  echo "install-deps: building the viewer (web/dist)"
  (cd web && rm -rf gen && npm run --silent generate && npm run --silent build)
fi
