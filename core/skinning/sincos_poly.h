// Internal: sin and cos of one angle |x| ≤ π in float for the per-frame kernels, generic over a
// float or an 8-lane vector (simd8.h) so that the scalar and the lane paths share one set of
// polynomials (their values may differ in the last bits: the lane path's AVX2 clone fuses
// multiply-adds, the scalar default build does not).
//
// Half-angle form without the half angle's own sine and cosine: with q = √2 sin(x/2) and
// p = √2 cos(x/2),  sin x = 2 sin(x/2) cos(x/2) = q p  and  cos x = 1 − 2 sin²(x/2) = 1 − q².
// q = x Q(x²) and p = P(x²) are minimax polynomials on [0, π²] (Remez exchange, degree 4 and 5
// in x², absolute error 4.7e-9 and 3.1e-10 in double), so the pair costs x², two Horner chains
// and two more operations — 13, against 21 for Taylor polynomials of x/2 and the double-angle
// formulas. tests/core/skinning/swing_twist_deformer_test.cc bounds the float error.
#ifndef SKINNING_CORE_SKINNING_SINCOS_POLY_H_
#define SKINNING_CORE_SKINNING_SINCOS_POLY_H_

namespace skinning {

template <typename T>
inline __attribute__((always_inline)) void SinCosPi(T x, T* s, T* c) {
  const T u = x * x;
  T q = u * 7.1552811931689023e-09f - 2.187710794018981e-06f;
  q = q * u + 3.6826562325257455e-04f;
  q = q * u - 2.9462748905251281e-02f;
  q = q * u + 7.0710676463309441e-01f;
  q = q * x;  // √2 sin(x/2)
  T p = u * -3.597888458617402e-10f + 1.3678185933190748e-07f;
  p = p * u - 3.0689232892745315e-05f;
  p = p * u + 3.6828451309141009e-03f;
  p = p * u - 1.7677669302849194e-01f;
  p = p * u + 1.4142135620628897f;  // √2 cos(x/2)
  *s = q * p;
  *c = 1.0f - q * q;
}

}  // namespace skinning

#endif  // SKINNING_CORE_SKINNING_SINCOS_POLY_H_
