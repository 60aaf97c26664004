#include "core/checksum.h"

#include <array>

namespace hetrec {
namespace {

// Slice-by-4 tables, built at compile time.
constexpr std::array<std::array<uint32_t, 256>, 4> make_tables() {
  std::array<std::array<uint32_t, 256>, 4> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1u) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    t[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; ++i)
    for (int s = 1; s < 4; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xFFu];
  return t;
}
constexpr auto kTables = make_tables();

}  // namespace

uint32_t crc32c(const void* data, std::size_t size, uint32_t previous) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint32_t c = ~previous;
  while (size >= 4) {
    c ^= static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) | (static_cast<uint32_t>(p[2]) << 16) |
         (static_cast<uint32_t>(p[3]) << 24);
    c = kTables[3][c & 0xFFu] ^ kTables[2][(c >> 8) & 0xFFu] ^ kTables[1][(c >> 16) & 0xFFu] ^ kTables[0][c >> 24];
    p += 4;
    size -= 4;
  }
  while (size--) c = kTables[0][(c ^ *p++) & 0xFFu] ^ (c >> 8);
  return ~c;
}

}  // namespace hetrec
