#!/usr/bin/env bash
# Installs, builds everything and runs the whole test suite with CTest. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
cd build
ctest --output-on-failure -j "${JOBS:-$(nproc)}" --timeout 600
