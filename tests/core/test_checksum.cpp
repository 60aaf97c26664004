#include <gtest/gtest.h>

#include <string>

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
