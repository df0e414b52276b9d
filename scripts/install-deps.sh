#!/usr/bin/env bash
# Installs the Debian 12 packages the project builds and tests with. Idempotent: does nothing
# when everything is already installed.
set -euo pipefail
PACKAGES=(
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler libeigen3-dev
  libsuitesparse-dev libabsl-dev prometheus-cpp-dev libgtest-dev libgmock-dev libbenchmark-dev
  libtinygltf-dev libhiredis-dev redis-server nlohmann-json3-dev libcivetweb-dev libssl-dev
  libopenblas0-pthread pkg-config cmake ninja-build ccache g++ git kubernetes-client python3-yaml
)
missing=()
for p in "${PACKAGES[@]}"; do
  # Any kubectl already installed (e.g. Google Cloud SDK's `kubectl` package, which owns
  # /usr/bin/kubectl and conflicts with kubernetes-client) serves the deploy render test.
  [ "$p" = kubernetes-client ] && command -v kubectl >/dev/null && continue
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
$SUDO apt-get update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
