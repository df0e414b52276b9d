// Internal: 4-lane float vectors for the per-frame kernels (lbs.cc, dqs.cc), written with GCC
// vector extensions — no intrinsics, so they compile for any target the compiler supports.
#ifndef SKINNING_CORE_SKINNING_SIMD4_H_
#define SKINNING_CORE_SKINNING_SIMD4_H_

#include <cstdint>
#include <cstring>

#if defined(__GNUC__) && defined(__has_builtin)
#if __has_builtin(__builtin_shufflevector)
#define SKINNING_VECTOR_EXT 1
#endif
#endif

// Hot kernels get an AVX2+FMA clone picked at load time on x86-64 (the default clone stays
// baseline x86-64); elsewhere nothing. -DSKINNING_NO_TARGET_CLONES turns the clones off. Not
// under ThreadSanitizer: GCC instruments the clones' ifunc resolver, which the dynamic loader runs
// while relocating, before the TSan runtime exists (the binary crashes at load); the TSan build
// checks threads, and the default clone runs the same code.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(SKINNING_NO_TARGET_CLONES) && !defined(__SANITIZE_THREAD__)
#define SKINNING_HOT_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define SKINNING_HOT_CLONES
#endif

#ifdef SKINNING_VECTOR_EXT
namespace skinning::simd4 {

using F4 = float __attribute__((vector_size(16)));
using I4 = int32_t __attribute__((vector_size(16)));

// Four floats from p (no alignment needed).
inline F4 Load4(const float* p) {
  F4 r;
  std::memcpy(&r, p, sizeof(r));
  return r;
}

// [Σ r0, Σ r1, Σ r2, Σ r3]: the lane sums of four vectors (a 4x4 transpose-add).
inline F4 LaneSums4(F4 r0, F4 r1, F4 r2, F4 r3) {
  const F4 a =
      __builtin_shufflevector(r0, r1, 0, 4, 1, 5) + __builtin_shufflevector(r0, r1, 2, 6, 3, 7);
  const F4 b =
      __builtin_shufflevector(r2, r3, 0, 4, 1, 5) + __builtin_shufflevector(r2, r3, 2, 6, 3, 7);
  return __builtin_shufflevector(a, b, 0, 1, 4, 5) + __builtin_shufflevector(a, b, 2, 3, 6, 7);
}

// a × b in lanes 0..2; lane 3 is a3 b3 - a3 b3 (0 for finite input).
inline F4 Cross(F4 a, F4 b) {
  const F4 a_yzx = __builtin_shufflevector(a, a, 1, 2, 0, 3);
  const F4 b_yzx = __builtin_shufflevector(b, b, 1, 2, 0, 3);
  const F4 c = a * b_yzx - a_yzx * b;
  return __builtin_shufflevector(c, c, 1, 2, 0, 3);
}

// Lane `lane` of a in all four lanes.
inline F4 Broadcast(F4 a, int lane) {
  switch (lane) {
    case 0:
      return __builtin_shufflevector(a, a, 0, 0, 0, 0);
    case 1:
      return __builtin_shufflevector(a, a, 1, 1, 1, 1);
    case 2:
      return __builtin_shufflevector(a, a, 2, 2, 2, 2);
    default:
      return __builtin_shufflevector(a, a, 3, 3, 3, 3);
  }
}

// The sum of K = 4 or 8 vectors as a balanced tree: (x0 + x1) + (x2 + x3), and for K = 8 the
// same over x4..x7 added to it (short dependency chains, a fixed order).
template <int K>
inline F4 TreeSum(const F4* x) {
  static_assert(K == 4 || K == 8, "K is 4 or 8");
  const F4 low = (x[0] + x[1]) + (x[2] + x[3]);
  if constexpr (K == 4) {
    return low;
  } else {
    return low + ((x[4] + x[5]) + (x[6] + x[7]));
  }
}

}  // namespace skinning::simd4
#endif  // SKINNING_VECTOR_EXT

#endif  // SKINNING_CORE_SKINNING_SIMD4_H_
