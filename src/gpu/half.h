#pragma once
// 16-bit float conversions usable on host and device, bit-identical to core/dtype.h:
// bf16 and fp16 loads, round-to-nearest-even stores, and stochastic-rounding stores
// (the rounding the sparse optimizer applies to 16-bit embedding rows).
#include <cstdint>

#include "gpu/platform.h"

#include <math.h>  // the global ldexp/frexp/rint/floor/fabs overloads, host and device alike

#include <cstring>

namespace hetrec::gpu {

HETREC_HD inline uint32_t float_bits(float x) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return __float_as_uint(x);
#else
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
#endif
}

HETREC_HD inline float bits_float(uint32_t u) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return __uint_as_float(u);
#else
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
#endif
}

HETREC_HD inline float bf16_bits_to_f32(uint16_t b) { return bits_float(static_cast<uint32_t>(b) << 16); }

HETREC_HD inline uint16_t f32_to_bf16_bits(float x) {
  const uint32_t u = float_bits(x);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((u >> 16) | 0x0040);  // quiet NaN
  return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);                 // ties to even
}

// Adds 16 random bits below the kept mantissa, then truncates; stays finite.
HETREC_HD inline uint16_t f32_to_bf16_bits_sr(float x, uint32_t random) {
  const uint32_t u = float_bits(x);
  if ((u & 0x7F800000u) == 0x7F800000u) return f32_to_bf16_bits(x);  // NaN or infinity
  uint16_t out = static_cast<uint16_t>((u + (random >> 16)) >> 16);
  if ((out & 0x7F80u) == 0x7F80u) out = static_cast<uint16_t>((out & 0x8000u) | 0x7F7Fu);
  return out;
}

// IEEE binary16 -> binary32, exact, by bit manipulation (subnormals renormalised).
HETREC_HD inline float f16_bits_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1Fu;
  uint32_t man = h & 0x3FFu;
  uint32_t u;
  if (exp == 0x1F) {
    u = sign | 0x7F800000u | (man << 13) | (man ? 0x00400000u : 0u);
  } else if (exp == 0) {
    if (man == 0) {
      u = sign;
    } else {
      int e = -1;
      do {  // normalise: shift until the implicit bit appears
        man <<= 1;
        ++e;
      } while ((man & 0x400u) == 0);
      u = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | ((man & 0x3FFu) << 13);
    }
  } else {
    u = sign | ((exp + (127 - 15)) << 23) | (man << 13);
  }
  return bits_float(u);
}

namespace half_detail {
// binary16 facts: 10 stored mantissa bits, minimum normal exponent -14, largest finite
// 65504, NaN pattern 0x7E00 (IEEE 754-2008).
inline constexpr int kF16ManBits = 10;
inline constexpr int kF16MinExp = -14;
inline constexpr double kF16MaxFinite = 65504.0;

// Bits of a non-negative value that is already a multiple of the format's quantum.
HETREC_HD inline uint32_t f16_encode_magnitude(double value) {
  if (value == 0.0) return 0;
  const double min_normal = ldexp(1.0, kF16MinExp);
  if (value < min_normal) return static_cast<uint32_t>(value / ldexp(1.0, kF16MinExp - kF16ManBits));
  int k = 0;
  const double frac = frexp(value, &k);
  const double man = (frac * 2.0 - 1.0) * ldexp(1.0, kF16ManBits);
  return (static_cast<uint32_t>(k - 1 + 15) << kF16ManBits) | static_cast<uint32_t>(man);
}

// The rounding of core/dtype.cpp's encode() for binary16, in the same double-precision
// steps so that host and device agree bit for bit. random < 0: nearest even.
HETREC_HD inline uint16_t f16_encode(float x, double random) {
  const uint32_t u = float_bits(x);
  const uint32_t sign = (u >> 16) & 0x8000u;
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>(sign | 0x7E00u);
  if ((u & 0x7FFFFFFFu) == 0x7F800000u) return static_cast<uint16_t>(sign | 0x7C00u);
  const double a = fabs(static_cast<double>(x));
  if (a == 0.0) return static_cast<uint16_t>(sign);
  int k = 0;
  (void)frexp(a, &k);
  const int e = (k - 1) > kF16MinExp ? (k - 1) : kF16MinExp;
  const double quantum = ldexp(1.0, e - kF16ManBits);
  const double scaled = a / quantum;
  const double rounded = random < 0.0 ? rint(scaled) : floor(scaled + random);
  double value = rounded * quantum;
  if (value > kF16MaxFinite) {
    // Nearest-even overflows to infinity from max + half an ulp (2^15 * 2^-11) upward.
    const double half_ulp = ldexp(1.0, 15 - kF16ManBits - 1);
    if (random < 0.0 && a >= kF16MaxFinite + half_ulp) return static_cast<uint16_t>(sign | 0x7C00u);
    value = kF16MaxFinite;
  }
  return static_cast<uint16_t>(sign | f16_encode_magnitude(value));
}
}  // namespace half_detail

HETREC_HD inline uint16_t f32_to_f16_bits(float x) { return half_detail::f16_encode(x, -1.0); }
HETREC_HD inline uint16_t f32_to_f16_bits_sr(float x, uint32_t random) {
  return half_detail::f16_encode(x, static_cast<double>(random) * 0x1.0p-32);
}

}  // namespace hetrec::gpu
