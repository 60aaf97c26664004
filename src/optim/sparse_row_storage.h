#pragma once
// How the fused sparse update reads embedding rows from their storage dtype (fp32, fp16,
// bf16) into fp32 and writes them back: round to nearest for initial values, stochastic
// rounding for updates, with random bits that are a pure function of (seed, step, table,
// row, element). Inline integer fast paths give the same bits as core/dtype.h (which
// they fall back to outside the fp16 normal range).
#include <bit>
#include <cstdint>

#include "core/seed_streams.h"
#include "core/dtype.h"
#include "core/rng.h"

namespace hetrec::inline optim {

namespace row_bits {
constexpr uint32_t kF32SignMask = 0x80000000u;
constexpr uint32_t kF32ExponentMask = 0x7F800000u;
constexpr uint32_t kF32ExponentOne = 1u << 23;             // one step of the fp32 exponent field
constexpr int kF16DroppedMantissaBits = 23 - 10;           // fp32 vs fp16 mantissa bits
constexpr uint32_t kF16MinNormalAsF32 = 0x38800000u;       // 2^-14, the smallest normal fp16
constexpr uint32_t kF16BeyondRangeAsF32 = 0x47800000u;     // 2^16: above every finite fp16
constexpr uint32_t kF32ToF16Rebias = (127u - 15u) << 23;   // exponent bias difference
constexpr uint32_t kF16ExponentAsF32 = 0x1Fu << 23;        // fp16 exponent field at fp32's place
constexpr uint32_t kF16MaxFinite = 0x7BFFu;                // 65504
constexpr uint32_t kBf16ExponentMask = 0x7F80u;
constexpr uint32_t kBf16MaxFiniteMagnitude = 0x7F7Fu;
}  // namespace row_bits

// fp16 -> fp32, exact for every bit pattern; branch-free so a loop over a row vectorises.
inline float fast_f16_to_f32(uint16_t h) {
  using namespace row_bits;
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t bits = static_cast<uint32_t>(h & 0x7FFFu) << kF16DroppedMantissaBits;
  const uint32_t exponent = bits & kF16ExponentAsF32;
  uint32_t rebased = bits + kF32ToF16Rebias;
  if (exponent == kF16ExponentAsF32) rebased += kF32ToF16Rebias;  // inf / NaN: exponent field 255
  float value = std::bit_cast<float>(rebased);
  // Zero or subnormal: read it as 2^-14 * (1 + m/1024), then subtract 2^-14 (exact).
  if (exponent == 0) value = std::bit_cast<float>(rebased + kF32ExponentOne) - std::bit_cast<float>(kF16MinNormalAsF32);
  return std::bit_cast<float>(std::bit_cast<uint32_t>(value) | sign);
}

// fp32 -> fp16, round to nearest even (same bits as f32_to_f16).
inline uint16_t fast_f32_to_f16(float x) {
  using namespace row_bits;
  const uint32_t u = std::bit_cast<uint32_t>(x);
  const uint32_t magnitude = u & ~kF32SignMask;
  if (magnitude < kF16MinNormalAsF32 || magnitude >= kF16BeyondRangeAsF32) return f32_to_f16(x);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t rebased = magnitude - kF32ToF16Rebias;
  const uint32_t below_half = (1u << (kF16DroppedMantissaBits - 1)) - 1u;
  const uint32_t h = (rebased + below_half + ((rebased >> kF16DroppedMantissaBits) & 1u)) >> kF16DroppedMantissaBits;
  if (h > kF16MaxFinite) return f32_to_f16(x);  // rounds to infinity
  return static_cast<uint16_t>(sign | h);
}

// fp32 -> fp16, stochastic rounding (same bits as f32_to_f16_sr): the top 13 random bits
// added below the kept mantissa carry into it with probability equal to the dropped
// fraction.
inline uint16_t fast_f32_to_f16_sr(float x, uint32_t random) {
  using namespace row_bits;
  const uint32_t u = std::bit_cast<uint32_t>(x);
  const uint32_t magnitude = u & ~kF32SignMask;
  if (magnitude < kF16MinNormalAsF32 || magnitude >= kF16BeyondRangeAsF32) return f32_to_f16_sr(x, random);
  const uint32_t sign = (u >> 16) & 0x8000u;
  uint32_t h = (magnitude - kF32ToF16Rebias + (random >> (32 - kF16DroppedMantissaBits))) >> kF16DroppedMantissaBits;
  if (h > kF16MaxFinite) h = kF16MaxFinite;  // stochastic rounding never leaves the range
  return static_cast<uint16_t>(sign | h);
}

// fp32 -> bf16, stochastic rounding (same bits as f32_to_bf16_sr).
inline uint16_t fast_f32_to_bf16_sr(float x, uint32_t random) {
  using namespace row_bits;
  const uint32_t u = std::bit_cast<uint32_t>(x);
  if ((u & kF32ExponentMask) == kF32ExponentMask) return f32_to_bf16_sr(x, random);  // inf / NaN
  auto out = static_cast<uint16_t>((u + (random >> 16)) >> 16);
  if ((out & kBf16ExponentMask) == kBf16ExponentMask)  // rounded past the largest finite value
    out = static_cast<uint16_t>((out & 0x8000u) | kBf16MaxFiniteMagnitude);
  return out;
}

// Row codecs: one element of a stored row to fp32 and back. kWidened: the update works on
// an fp32 copy of the row and rounds it back stochastically.
struct F32Rows {
  using Storage = float;
  static constexpr bool kWidened = false;
  static float load(const float* row, int d) { return row[d]; }
  static float store_nearest(float v) { return v; }
};
struct F16Rows {
  using Storage = uint16_t;
  static constexpr bool kWidened = true;
  static float load(const uint16_t* row, int d) { return fast_f16_to_f32(row[d]); }
  static uint16_t store_nearest(float v) { return fast_f32_to_f16(v); }
  static uint16_t store_stochastic(float v, uint32_t random) { return fast_f32_to_f16_sr(v, random); }
};
struct BF16Rows {
  using Storage = uint16_t;
  static constexpr bool kWidened = true;
  static float load(const uint16_t* row, int d) { return std::bit_cast<float>(static_cast<uint32_t>(row[d]) << 16); }
  static uint16_t store_nearest(float v) { return f32_to_bf16(v); }
  static uint16_t store_stochastic(float v, uint32_t random) { return fast_f32_to_bf16_sr(v, random); }
};

// Keys of the rounding draws (core/seed_streams.h, shared with the GPU kernels).
using seed_streams::rounding_row_key;
using seed_streams::rounding_table_key;

// Writes an fp32 row back with stochastic rounding, element e with the random bits
// seed_streams::rounding_bits(row_key, e).
template <class Rows>
void store_row_stochastic(typename Rows::Storage* row, const float* values, int dim, uint64_t row_key) {
  int d = 0;
  for (; d + 1 < dim; d += 2) {
    const uint64_t draw = mix64(row_key + static_cast<uint64_t>(d >> 1));  // both halves of one draw
    row[d] = Rows::store_stochastic(values[d], static_cast<uint32_t>(draw >> 32));
    row[d + 1] = Rows::store_stochastic(values[d + 1], static_cast<uint32_t>(draw));
  }
  if (d < dim) row[d] = Rows::store_stochastic(values[d], seed_streams::rounding_bits(row_key, d));
}

}  // namespace hetrec::optim::optim
