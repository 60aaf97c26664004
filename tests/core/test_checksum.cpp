#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/checksum.h"

using namespace hetrec;

TEST(Crc32c, KnownVectorsAndIncremental) {
  // Check values from RFC 3720 (iSCSI), appendix B.4, and the common "123456789" vector.
  const std::string digits = "123456789";
  EXPECT_EQ(crc32c(digits.data(), digits.size()), 0xE3069283u);
  std::string zeros(32, '\0');
  EXPECT_EQ(crc32c(zeros.data(), zeros.size()), 0x8A9136AAu);
  std::string ones(32, '\xff');
  EXPECT_EQ(crc32c(ones.data(), ones.size()), 0x62A8AB43u);
  const uint32_t part = crc32c(digits.data(), 4);
  EXPECT_EQ(crc32c(digits.data() + 4, digits.size() - 4, part), 0xE3069283u);
}

TEST(Crc32c, PortableTablesAgreeWithTheKnownVectors) {
  const std::string digits = "123456789";
  EXPECT_EQ(crc32c_portable(digits.data(), digits.size()), 0xE3069283u);
  std::string ones(32, '\xff');
  EXPECT_EQ(crc32c_portable(ones.data(), ones.size()), 0x62A8AB43u);
}

// The instruction path (where the CPU has it) and the tables agree on random bytes of
// every length up to a few words, at every start alignment, and incrementally.
TEST(Crc32c, FastPathMatchesTheTablesOnRandomData) {
  std::vector<unsigned char> data(4096 + 64);
  uint64_t x = 0x9E3779B97F4A7C15ull;
  for (auto& b : data) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    b = static_cast<unsigned char>(x >> 24);
  }
  for (std::size_t offset = 0; offset < 8; ++offset)
    for (std::size_t size : {0, 1, 3, 7, 8, 9, 15, 16, 17, 63, 64, 65, 1000, 4096})
      ASSERT_EQ(crc32c(data.data() + offset, size), crc32c_portable(data.data() + offset, size))
          << "offset " << offset << " size " << size;
  const uint32_t head = crc32c(data.data(), 1001);
  EXPECT_EQ(crc32c(data.data() + 1001, 2000, head), crc32c_portable(data.data(), 3001));
}

TEST(Crc32c, CombineEqualsTheChecksumOfTheConcatenation) {
  std::vector<unsigned char> data(1 << 16);
  uint64_t x = 0x2545F4914F6CDD1Dull;
  for (auto& b : data) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    b = static_cast<unsigned char>(x >> 32);
  }
  const uint32_t whole = crc32c(data.data(), data.size());
  for (std::size_t cut : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{4096}, std::size_t{40000},
                          data.size() - 1, data.size()}) {
    const uint32_t a = crc32c(data.data(), cut), b = crc32c(data.data() + cut, data.size() - cut);
    EXPECT_EQ(crc32c_combine(a, b, data.size() - cut), whole) << "cut at " << cut;
  }
  // Several pieces, combined left to right.
  uint32_t acc = 0;
  std::size_t at = 0;
  for (std::size_t piece : {std::size_t{5}, std::size_t{12345}, std::size_t{1}, std::size_t{30000}}) {
    acc = crc32c_combine(acc, crc32c(data.data() + at, piece), piece);
    at += piece;
  }
  EXPECT_EQ(acc, crc32c(data.data(), at));
}
