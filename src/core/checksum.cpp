#include "core/checksum.h"

#include <array>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>
#define HETREC_CRC32C_SSE42 1
#endif

namespace hetrec {
namespace {

constexpr uint32_t kReflectedPolynomial = 0x82F63B78u;

// Slice-by-4 tables, built at compile time.
constexpr std::array<std::array<uint32_t, 256>, 4> make_tables() {
  std::array<std::array<uint32_t, 256>, 4> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1u) ? (c >> 1) ^ kReflectedPolynomial : c >> 1;
    t[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; ++i)
    for (int s = 1; s < 4; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xFFu];
  return t;
}
constexpr auto kTables = make_tables();

// Raw (not pre/post-inverted) CRC state update over bytes, table-driven.
uint32_t update_portable(uint32_t c, const unsigned char* p, std::size_t size) {
  while (size >= 4) {
    c ^= static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) | (static_cast<uint32_t>(p[2]) << 16) |
         (static_cast<uint32_t>(p[3]) << 24);
    c = kTables[3][c & 0xFFu] ^ kTables[2][(c >> 8) & 0xFFu] ^ kTables[1][(c >> 16) & 0xFFu] ^ kTables[0][c >> 24];
    p += 4;
    size -= 4;
  }
  while (size--) c = kTables[0][(c ^ *p++) & 0xFFu] ^ (c >> 8);
  return c;
}

#if defined(HETREC_CRC32C_SSE42)
// The SSE4.2 crc32 instruction computes exactly this CRC (Castagnoli, reflected), 8
// bytes per instruction.
__attribute__((target("sse4.2"))) uint32_t update_sse42(uint32_t c, const unsigned char* p, std::size_t size) {
  uint64_t c64 = c;
  while (size >= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    c64 = _mm_crc32_u64(c64, v);
    p += 8;
    size -= 8;
  }
  c = static_cast<uint32_t>(c64);
  while (size--) c = _mm_crc32_u8(c, *p++);
  return c;
}

bool cpu_has_sse42() {
  static const bool has = __builtin_cpu_supports("sse4.2");
  return has;
}
#endif

// 32 x 32 matrices over GF(2), column i as a word: the linear map of the CRC state over
// zero bytes (as in zlib's crc32_combine).
using Gf2Matrix = std::array<uint32_t, 32>;

uint32_t gf2_times(const Gf2Matrix& m, uint32_t v) {
  uint32_t sum = 0;
  for (int i = 0; v != 0; ++i, v >>= 1)
    if (v & 1u) sum ^= m[static_cast<std::size_t>(i)];
  return sum;
}

Gf2Matrix gf2_square(const Gf2Matrix& m) {
  Gf2Matrix r{};
  for (std::size_t i = 0; i < 32; ++i) r[i] = gf2_times(m, m[i]);
  return r;
}

}  // namespace

uint32_t crc32c_portable(const void* data, std::size_t size, uint32_t previous) {
  return ~update_portable(~previous, static_cast<const unsigned char*>(data), size);
}

uint32_t crc32c(const void* data, std::size_t size, uint32_t previous) {
  const auto* p = static_cast<const unsigned char*>(data);
#if defined(HETREC_CRC32C_SSE42)
  if (cpu_has_sse42()) return ~update_sse42(~previous, p, size);
#endif
  return ~update_portable(~previous, p, size);
}

uint32_t crc32c_combine(uint32_t crc_a, uint32_t crc_b, std::size_t size_b) {
  if (size_b == 0) return crc_a;
  // odd: the state after one zero bit; squaring gives 2, 4, 8, ... zero bits.
  Gf2Matrix odd{}, even{};
  odd[0] = kReflectedPolynomial;
  for (std::size_t i = 1; i < 32; ++i) odd[i] = 1u << (i - 1);
  even = gf2_square(odd);  // 2 zero bits
  odd = gf2_square(even);  // 4 zero bits
  // Apply size_b zero bytes to crc_a: each loop squares to 8, 16, ... bits and applies
  // the power when the corresponding bit of size_b is set.
  for (;;) {
    even = gf2_square(odd);
    if (size_b & 1u) crc_a = gf2_times(even, crc_a);
    size_b >>= 1;
    if (size_b == 0) break;
    odd = gf2_square(even);
    if (size_b & 1u) crc_a = gf2_times(odd, crc_a);
    size_b >>= 1;
    if (size_b == 0) break;
  }
  return crc_a ^ crc_b;
}

}  // namespace hetrec
