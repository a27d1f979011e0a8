// exp in fp64 that compilers vectorise (GCC needs -fno-trapping-math, set project-wide): a branch-free Cody-Waite
// reduction, a degree-13 Taylor polynomial and a two-step scaling by 2^k. Within 1 ulp of exp
// (tests/core/softmax_kernels_test.cpp), exp(-inf) = 0, exp(+inf) = inf, NaN propagates, subnormal results rounded
// once. Every softmax of the replay engine and of the scorer's CPU twin uses it, so the two stay bit-identical while
// the exponentials run several to an instruction (the libm call does not vectorise).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

namespace kvo {

[[gnu::always_inline]] inline double exp_fp64(double x) {
  constexpr double kLog2e = 0x1.71547652b82fep0;
  constexpr double kLn2Hi = 0x1.62e42fefa39efp-1;  // ln 2 = kLn2Hi + kLn2Lo to 2^-110
  constexpr double kLn2Lo = 0x1.abc9e3b39803fp-56;
  constexpr double kShift = 0x1.8p52;  // adding it rounds to an integer kept in the low bits
  // Clamp: below -746 the result is 0, above 710 it is inf; NaN passes through (compares false).
  double xc = x < -746.0 ? -746.0 : x;
  xc = xc > 710.0 ? 710.0 : xc;
  const double t = std::fma(xc, kLog2e, kShift);  // k = nearest integer to x / ln 2
  const double kd = t - kShift;                   // exactly k, |k| <= 1077
  double r = std::fma(kd, -kLn2Hi, xc);           // r = x - k ln 2, |r| <= 0.35
  r = std::fma(kd, -kLn2Lo, r);
  // e^r by Taylor to r^13 (truncation below 4e-18 on |r| <= 0.35), Horner with fused steps.
  double p = 1.0 / 6227020800.0;
  p = std::fma(p, r, 1.0 / 479001600.0);
  p = std::fma(p, r, 1.0 / 39916800.0);
  p = std::fma(p, r, 1.0 / 3628800.0);
  p = std::fma(p, r, 1.0 / 362880.0);
  p = std::fma(p, r, 1.0 / 40320.0);
  p = std::fma(p, r, 1.0 / 5040.0);
  p = std::fma(p, r, 1.0 / 720.0);
  p = std::fma(p, r, 1.0 / 120.0);
  p = std::fma(p, r, 1.0 / 24.0);
  p = std::fma(p, r, 1.0 / 6.0);
  p = std::fma(p, r, 0.5);
  p = std::fma(p, r, 1.0);
  p = std::fma(p, r, 1.0);
  // 2^k as 2^k1 * 2^k2 with k1 = floor(k / 2) and k2 = k - k1, both factors normal: the first
  // product is exact, the second rounds only into the subnormal range or to inf. The exponent
  // fields are built in fp64 (k1 + 1023 + 2^52 holds k1 + 1023 in its low bits; a left shift by 52
  // moves them into the exponent field), because AVX2 has no 64-bit arithmetic shift or
  // double-to-int64 conversion and the loop would not vectorise with either.
  constexpr double kBias = 0x1p52 + 1023.0;
  const double k1 = std::floor(kd * 0.5);
  const double e1 = k1 + kBias, e2 = (kd - k1) + kBias;  // integers below 2^53: exact
  std::uint64_t s1_bits, s2_bits;
  std::memcpy(&s1_bits, &e1, sizeof e1);
  std::memcpy(&s2_bits, &e2, sizeof e2);
  s1_bits <<= 52;
  s2_bits <<= 52;
  double s1, s2;
  std::memcpy(&s1, &s1_bits, sizeof s1);
  std::memcpy(&s2, &s2_bits, sizeof s2);
  const double y = p * s1 * s2;
  return x != x ? x : y;
}

}  // namespace kvo
