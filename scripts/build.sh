#!/usr/bin/env bash
# Configures (once) and builds the given targets (default: everything) in ./build with Ninja.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release
fi
# Two compile jobs: one per core; more would only thrash the 2-core machines we target.
cmake --build "$BUILD_DIR" -j "${JOBS:-$(nproc)}" ${@:+--target "$@"}
