#!/usr/bin/env bash
# Builds the fuzz targets (tests/fuzz) as libFuzzer binaries with clang, ASan and UBSan in
# ./build-fuzz, and runs each on a copy of its seeds for RUNS executions (default 1,000,000) or
# SECONDS seconds, whichever comes first, printing executions and coverage (edges) per target.
#   bash scripts/fuzz.sh                       # every target
#   RUNS=100000 SECONDS_PER_TARGET=120 bash scripts/fuzz.sh gltf_fuzz obj_fuzz
# A crash, hang (-timeout=10 s per input) or sanitizer report stops that target with its input
# saved in build-fuzz/artifacts/ and makes the script exit non-zero. Not run by CTest (the
# normal build replays the seeds instead).
set -euo pipefail
cd "$(dirname "$0")/.."
TARGETS=("$@")
[ ${#TARGETS[@]} -eq 0 ] && TARGETS=(obj_fuzz off_fuzz medit_fuzz tgf_fuzz dmat_fuzz gltf_fuzz create_rig_fuzz
  pose_json_fuzz fast_json_fuzz connect_json_fuzz gzip_fuzz grpc_web_fuzz http_head_fuzz rpc_fuzz)
RUNS=${RUNS:-1000000}
SECONDS_PER_TARGET=${SECONDS_PER_TARGET:-1800}
DATA=${SKINNING_DATA_DIR:-$(cd .. && pwd)/shared/data}
if [ ! -f build-fuzz/build.ninja ]; then
  CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSKINNING_FUZZ=ON \
    -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined" \
    -DCMAKE_C_FLAGS="-fsanitize=fuzzer-no-link,address,undefined" \
    -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined"
fi
# The seeds written at build time (and the in-process server they need) only for their targets.
EXTRA=()
for t in "${TARGETS[@]}"; do case $t in create_rig_fuzz|rpc_fuzz) EXTRA=(fuzz_seeds) ;; esac; done
cmake --build build-fuzz -j "${JOBS:-$(nproc)}" --target "${EXTRA[@]}" "${TARGETS[@]}"
mkdir -p build-fuzz/artifacts
status=0
printf '%-18s %12s %10s %10s %s\n' target executions "exec/s" edges result
for t in "${TARGETS[@]}"; do
  corpus=build-fuzz/corpus/$t
  mkdir -p "$corpus"
  case $t in
    gltf_fuzz) seeds=(tests/fuzz/seeds/gltf "$DATA/gltf") ;;
    create_rig_fuzz) seeds=(build-fuzz/tests/fuzz/seeds/create_rig) ;;
    rpc_fuzz) seeds=(build-fuzz/tests/fuzz/seeds/rpc) ;;
    pose_json_fuzz) seeds=(tests/fuzz/seeds/pose_json) ;;
    fast_json_fuzz) seeds=(tests/fuzz/seeds/fast_json) ;;
    connect_json_fuzz) seeds=(tests/fuzz/seeds/connect_json) ;;
    gzip_fuzz) seeds=(tests/fuzz/seeds/gzip) ;;
    grpc_web_fuzz) seeds=(tests/fuzz/seeds/grpc_web) ;;
    http_head_fuzz) seeds=(tests/fuzz/seeds/http_head) ;;
    *) seeds=("tests/fuzz/seeds/${t%_fuzz}" "$DATA/libigl" "$DATA/deformation-benchmark") ;;
  esac
  for s in "${seeds[@]}"; do [ -e "$s" ] && find "$s" -type f -size -2M -exec cp -n {} "$corpus"/ \; ; done
  # Inputs up to 64 KiB (larger seeds are cut): mutations of a 2 MB mesh cost a thousand times
  # more than those of a small one and find nothing more in a line-by-line reader.
  case $t in gltf_fuzz|create_rig_fuzz|rpc_fuzz) max_len=1048576 ;; *) max_len=65536 ;; esac
  log=build-fuzz/$t.log
  if ./build-fuzz/tests/fuzz/$t "$corpus" -runs="$RUNS" -max_total_time="$SECONDS_PER_TARGET" -timeout=10 \
       -max_len="$max_len" \
       -rss_limit_mb=2048 -artifact_prefix=build-fuzz/artifacts/"$t"- -print_final_stats=1 >"$log" 2>&1; then
    result=ok
  else
    result="FAILED (see $log)"
    status=1
  fi
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  edges=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  printf '%-18s %12s %10s %10s %s\n' "$t" "${execs:-?}" "${speed:-?}" "${edges:-?}" "$result"
done
exit $status
