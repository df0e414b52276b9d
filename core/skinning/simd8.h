// Internal: 8-lane float vectors for the per-frame kernels of the joint-based deformers and DQS
// (swing_twist.cc, stbs.cc, dqs.cc), written with GCC vector extensions like simd4.h — no
// intrinsics; the kernels that use them get an AVX2+FMA clone through SKINNING_HOT_CLONES.
#ifndef SKINNING_CORE_SKINNING_SIMD8_H_
#define SKINNING_CORE_SKINNING_SIMD8_H_

#include <cstdint>
#include <cstring>

#include "core/skinning/simd4.h"
#include "core/skinning/sincos_poly.h"

// Forced inline: see below.
#define SKINNING_LANES_INLINE inline __attribute__((always_inline))

#ifdef SKINNING_VECTOR_EXT
// Every function that takes or returns an 8-lane vector is forced inline
// (SKINNING_LANES_INLINE): called from an AVX2 clone (SKINNING_HOT_CLONES) but compiled for the
// default ISA, a function left out of line would receive 32-byte vectors under the other calling
// convention (the psABI note) and read garbage — which an -O1 sanitizer build, inlining less,
// showed. So the ABI note does not apply and is silenced.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace skinning::simd8 {

using F8 = float __attribute__((vector_size(32)));
using I8 = int32_t __attribute__((vector_size(32)));

static SKINNING_LANES_INLINE F8 Load8(const float* p) {
  F8 r;
  std::memcpy(&r, p, sizeof(r));
  return r;
}

// sin and cos of x for |x| ≤ π (no range reduction): FastSinCos's polynomials (SinCosPi).
static SKINNING_LANES_INLINE void SinCos8Reduced(F8 x, F8* s, F8* c) { SinCosPi(x, s, c); }

// FastSinCos on 8 lanes (same reduction and polynomials).
static SKINNING_LANES_INLINE void SinCos8(F8 x, F8* s, F8* c) {
  // k = round(x / 2π) as FastSinCos: the offset keeps the truncation a floor for |x| < 100,000;
  // kf is kept in [0, 32767] before the conversion to int (NaN → 0), since lanes whose weight is
  // masked may hold any value and converting one out of int's range is undefined (UBSan found it).
  F8 kf = x * 0.15915494309189535f + 16384.5f;
  kf = kf >= 0.0f ? kf : 0.0f;
  kf = kf <= 32767.0f ? kf : 32767.0f;
  const F8 k = __builtin_convertvector(__builtin_convertvector(kf, I8) - 16384, F8);
  x = (x - k * 6.28125f) - k * 1.9353071795864769253e-3f;
  SinCos8Reduced(x, s, c);
}

// 8 rows of 4 contiguous values (rows i0..i0+7 of an n×4 row-major array) as 4 slot vectors.
template <typename V8, typename T>
static SKINNING_LANES_INLINE void Transpose8x4(const T* __restrict p, V8 out[4]) {
  V8 a[4];  // a[q] = rows 2q, 2q+1
  for (int q = 0; q < 4; ++q) std::memcpy(&a[q], p + 8 * q, sizeof(V8));
  const V8 t01 = __builtin_shufflevector(a[0], a[1], 0, 4, 8, 12, 1, 5, 9, 13);
  const V8 t23 = __builtin_shufflevector(a[2], a[3], 0, 4, 8, 12, 1, 5, 9, 13);
  const V8 u01 = __builtin_shufflevector(a[0], a[1], 2, 6, 10, 14, 3, 7, 11, 15);
  const V8 u23 = __builtin_shufflevector(a[2], a[3], 2, 6, 10, 14, 3, 7, 11, 15);
  out[0] = __builtin_shufflevector(t01, t23, 0, 1, 2, 3, 8, 9, 10, 11);
  out[1] = __builtin_shufflevector(t01, t23, 4, 5, 6, 7, 12, 13, 14, 15);
  out[2] = __builtin_shufflevector(u01, u23, 0, 1, 2, 3, 8, 9, 10, 11);
  out[3] = __builtin_shufflevector(u01, u23, 4, 5, 6, 7, 12, 13, 14, 15);
}

// 8 rows of 8 contiguous values (rows i0..i0+7 of an n×8 row-major array) as 8 slot vectors:
// pairs of rows interleaved, then 4-row groups, then the 128-bit halves exchanged.
template <typename V8, typename T>
static SKINNING_LANES_INLINE void Transpose8x8(const T* __restrict p, V8 out[8]) {
  V8 r[8];
  for (int q = 0; q < 8; ++q) std::memcpy(&r[q], p + 8 * q, sizeof(V8));
  V8 s[8];  // s[4h + c]: column c (rows 4h..4h+3) in the low half, column c + 4 in the high half
  for (int h = 0; h < 2; ++h) {
    const V8 lo01 = __builtin_shufflevector(r[4 * h], r[4 * h + 1], 0, 8, 1, 9, 4, 12, 5, 13);
    const V8 hi01 = __builtin_shufflevector(r[4 * h], r[4 * h + 1], 2, 10, 3, 11, 6, 14, 7, 15);
    const V8 lo23 = __builtin_shufflevector(r[4 * h + 2], r[4 * h + 3], 0, 8, 1, 9, 4, 12, 5, 13);
    const V8 hi23 = __builtin_shufflevector(r[4 * h + 2], r[4 * h + 3], 2, 10, 3, 11, 6, 14, 7, 15);
    s[4 * h] = __builtin_shufflevector(lo01, lo23, 0, 1, 8, 9, 4, 5, 12, 13);
    s[4 * h + 1] = __builtin_shufflevector(lo01, lo23, 2, 3, 10, 11, 6, 7, 14, 15);
    s[4 * h + 2] = __builtin_shufflevector(hi01, hi23, 0, 1, 8, 9, 4, 5, 12, 13);
    s[4 * h + 3] = __builtin_shufflevector(hi01, hi23, 2, 3, 10, 11, 6, 7, 14, 15);
  }
  for (int c = 0; c < 4; ++c) {
    out[c] = __builtin_shufflevector(s[c], s[4 + c], 0, 1, 2, 3, 8, 9, 10, 11);
    out[c + 4] = __builtin_shufflevector(s[c], s[4 + c], 4, 5, 6, 7, 12, 13, 14, 15);
  }
}

// Lane-wise m ? a : b for a mask m of all-ones or zero lanes.
static SKINNING_LANES_INLINE F8 Select(I8 m, F8 a, F8 b) { return m ? a : b; }
static SKINNING_LANES_INLINE I8 Select(I8 m, I8 a, I8 b) { return m ? a : b; }

// x, y, z of 8 interleaved points.
static SKINNING_LANES_INLINE void Deinterleave8(const float* __restrict v, F8* x, F8* y, F8* z) {
  const F8 a = Load8(v), b = Load8(v + 8), c = Load8(v + 16);
  const F8 tx = __builtin_shufflevector(a, b, 0, 3, 6, 9, 12, 15, 0, 0);
  const F8 ty = __builtin_shufflevector(a, b, 1, 4, 7, 10, 13, 0, 0, 0);
  const F8 tz = __builtin_shufflevector(a, b, 2, 5, 8, 11, 14, 0, 0, 0);
  *x = __builtin_shufflevector(tx, c, 0, 1, 2, 3, 4, 5, 10, 13);
  *y = __builtin_shufflevector(ty, c, 0, 1, 2, 3, 4, 8, 11, 14);
  *z = __builtin_shufflevector(tz, c, 0, 1, 2, 3, 4, 9, 12, 15);
}

// Whether any lane of the mask is set, and the first set lane (−1 if none): through memory,
// which costs no shuffles (the kernel is shuffle-bound otherwise).
static SKINNING_LANES_INLINE bool AnyLane(I8 m) {
  uint64_t q[4];
  std::memcpy(q, &m, sizeof(q));
  return ((q[0] | q[1]) | (q[2] | q[3])) != 0;
}
static SKINNING_LANES_INLINE int FirstLane(I8 m) {
  int32_t a[8];
  std::memcpy(a, &m, sizeof(a));
  for (int l = 0; l < 8; ++l)
    if (a[l] != 0) return l;
  return -1;
}

// Lane l of v.
static SKINNING_LANES_INLINE int32_t LaneValue(I8 v, int l) {
  int32_t a[8];
  std::memcpy(a, &v, sizeof(a));
  return a[l];
}

// One step of visiting each distinct value of v among the lanes set in *pending (at least one):
// returns the first pending lane's value, sets *mine to the pending lanes that hold it and takes
// them out of *pending. `while (AnyLane(pending)) { j = TakeLaneGroup(v, &pending, &mine); ... }`
static SKINNING_LANES_INLINE int32_t TakeLaneGroup(I8 v, I8* pending, I8* mine) {
  const int32_t value = LaneValue(v, FirstLane(*pending));
  *mine = *pending & (v == value);
  *pending &= ~*mine;
  return value;
}

// f = 2 / |b0|² of a blended (non-unit) dual quaternion b = (v, w) + ε (e, ew), 0 for a zero real
// part (Kavan et al. 2008; dqs.cc): the normalization BlendedDqApply8 takes.
static SKINNING_LANES_INLINE F8 BlendedDqScale8(const F8 b[8]) {
  const F8 zero = {};
  const F8 n2 = b[0] * b[0] + b[1] * b[1] + b[2] * b[2] + b[3] * b[3];
  return Select(n2 > zero, 2.f / n2, zero);
}

// The rigid motion of b normalized by |b0| on 8 points, f = BlendedDqScale8(b):
// u = p + f (w a + v × a − ew v), a = v × p + e (f = 0: the identity).
static SKINNING_LANES_INLINE void BlendedDqApply8(const F8 b[8], F8 f, F8 px, F8 py, F8 pz,
                                                  F8* ux, F8* uy, F8* uz) {
  const F8 vx = b[0], vy = b[1], vz = b[2], qw = b[3];
  const F8 ex = b[4], ey = b[5], ez = b[6], ew = b[7];
  const F8 ax = vy * pz - vz * py + ex;
  const F8 ay = vz * px - vx * pz + ey;
  const F8 az = vx * py - vy * px + ez;
  *ux = px + f * (qw * ax + (vy * az - vz * ay) - ew * vx);
  *uy = py + f * (qw * ay + (vz * ax - vx * az) - ew * vy);
  *uz = pz + f * (qw * az + (vx * ay - vy * ax) - ew * vz);
}

// Stores x, y, z of 8 points interleaved (24 floats).
static SKINNING_LANES_INLINE void Interleave8(F8 x, F8 y, F8 z, float* __restrict u) {
  const F8 t0 = __builtin_shufflevector(x, y, 0, 8, 0, 1, 9, 1, 2, 10);
  const F8 o0 = __builtin_shufflevector(t0, z, 0, 1, 8, 3, 4, 9, 6, 7);
  const F8 t1 = __builtin_shufflevector(x, y, 0, 3, 11, 0, 4, 12, 0, 5);
  const F8 o1 = __builtin_shufflevector(t1, z, 10, 1, 2, 11, 4, 5, 12, 7);
  const F8 t2 = __builtin_shufflevector(x, y, 13, 0, 6, 14, 0, 7, 15, 0);
  const F8 o2 = __builtin_shufflevector(t2, z, 0, 13, 2, 3, 14, 5, 6, 15);
  std::memcpy(u, &o0, sizeof(F8));
  std::memcpy(u + 8, &o1, sizeof(F8));
  std::memcpy(u + 16, &o2, sizeof(F8));
}

}  // namespace skinning::simd8
#endif  // SKINNING_VECTOR_EXT

#endif  // SKINNING_CORE_SKINNING_SIMD8_H_
