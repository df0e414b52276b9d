#!/usr/bin/env bash
# Builds and runs the test suite under sanitizers, each in its own build folder (ccache shares
# what it can). .ci/run runs `asan core` after the plain suite; the whole-suite ASan run and the
# TSan run are run by hand before a change to threads, stores or front doors lands (README
# "Sanitizers" has the split and the times).
#   bash scripts/sanitize.sh asan        # ASan + UBSan, every test of the suite      (build-asan)
#   bash scripts/sanitize.sh asan core   # ASan + UBSan, core_tests only (what .ci/run runs)
#   bash scripts/sanitize.sh tsan        # TSan, the tests that run our own threads   (build-tsan)
# Any report fails the run (halt_on_error); suppressions live in scripts/sanitizers/ and each says
# why. Sanitized binaries are slower: timeouts are raised, and the benchmarks are not built.
set -euo pipefail
cd "$(dirname "$0")/.."
KIND=${1:?usage: sanitize.sh asan [core] | tsan}
SCOPE=${2:-all}
case $KIND:$SCOPE in
  asan:all | asan:core | tsan:all) ;;
  *) echo "unknown sanitizer run '$*' (asan, asan core or tsan)" >&2; exit 2 ;;
esac
JOBS=${JOBS:-$(nproc)}
SUPP=$(pwd)/scripts/sanitizers
case $KIND in
  asan)
    DIR=build-asan
    FLAGS="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
    TARGETS=()  # everything the tests need (benchmarks are off)
    export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:detect_stack_use_after_return=0:suppressions=$SUPP/asan.supp"
    export LSAN_OPTIONS="suppressions=$SUPP/lsan.supp:print_suppressions=0"
    export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:suppressions=$SUPP/ubsan.supp"
    # Not the image check: the image ships the release build, and this build's binaries load
    # libasan and libubsan, which check_image.py rightly finds missing from the runtime stage.
    CTEST_ARGS=(-E '^DeployImageBuildsAndHasEveryLibrary$')
    if [ "$SCOPE" = core ]; then
      # The algorithms and kernels (where every finding so far was), without the server, client
      # and end-to-end suites: 15 to 17 of the full run's 35 minutes (README "Sanitizers").
      TARGETS=(core_tests)
      CTEST_ARGS=(-L '^core_tests$')
    fi
    ;;
  tsan)
    DIR=build-tsan
    FLAGS="-fsanitize=thread -fno-omit-frame-pointer"
    TARGETS=(core_tests server_tests skinning-server)
    export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$SUPP/tsan.supp"
    # No library threads whose locks TSan cannot see: Debian's CHOLMOD runs OpenMP loops on 4
    # libgomp threads and OpenBLAS has its own pthreads, neither built with TSan, so every
    # factorization reported races inside cholmod_clear_flag / dscal_k against those threads
    # (their barriers are futexes TSan does not know). With these the libraries run on the
    # calling thread; our own threads (pools, queue, caches) are all still checked.
    export OMP_MAX_ACTIVE_LEVELS=0 OPENBLAS_NUM_THREADS=1
    # Our threads: the parallel loops of the bakes (BBW, EMW, elastic, voxelization, bone heat),
    # the bake queue, the caches and stores, the PSD model cache, the poser, and the DQS vertex
    # order that the first DQS frame of a rig or bake prepares once for concurrent calls.
    CTEST_ARGS=(-R '^(BbwTest|EnergyMinimizingWeight|BuildElasticModel|ElasticModel|GeodesicWeightsTest|BoneHeatTest|VolumeDomainTest|Bake|LocalBakeQueueTest|RigStore|RigStoreTenancy|ExampleStore|PsdModels|FilesystemBlobStore|RedisBlobStoreTest|PoserTest|BakeStore)\.|^DqsTest\.Lazy')
    ;;
esac
if [ ! -f "$DIR/build.ninja" ]; then
  cmake -S . -B "$DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSKINNING_BUILD_BENCH=OFF \
    -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" -DCMAKE_C_FLAGS_RELEASE="-O1 -DNDEBUG" \
    -DCMAKE_CXX_FLAGS="$FLAGS" -DCMAKE_C_FLAGS="$FLAGS" \
    -DCMAKE_EXE_LINKER_FLAGS="$FLAGS" -DCMAKE_SHARED_LINKER_FLAGS="$FLAGS"
fi
cmake --build "$DIR" -j "$JOBS" ${TARGETS[@]:+--target "${TARGETS[@]}"}
cd "$DIR"
ctest --output-on-failure -j "$JOBS" --timeout 1800 "${CTEST_ARGS[@]}"
