// The quality constraints file (plan/constraints_toml.h): the keys it holds replace the
// defaults, the rest stay; a typo, a wrong type, an unknown precision or a bad value is
// a ConfigError naming the file and the key.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.h"
#include "plan/constraints_toml.h"

namespace hetrec::test {
namespace {

std::string write_temp(const std::string& name, const std::string& text) {
  const auto dir = std::filesystem::temp_directory_path() / ("hetrec_constraints_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / name).string();
  std::ofstream(path) << text;
  return path;
}

void expect_error(const std::string& name, const std::string& text, const std::string& needle) {
  PlanConstraints c;
  const std::string path = write_temp(name, text);
  try {
    apply_constraints_file(path, c);
    FAIL() << name << ": accepted";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(path), std::string::npos) << what;
    EXPECT_NE(what.find(needle), std::string::npos) << what;
  }
}

TEST(ConstraintsFile, ReplacesTheKeysItHolds) {
  PlanConstraints c;
  apply_constraints_file(write_temp("ok.toml", "[plan]\nmax_batch = 65536\nrows = [\"fp32\", \"bf16\"]\n"
                                               "dense = [\"tf32\"]\nheadroom = 0.2\n"),
                         c);
  EXPECT_EQ(c.max_batch, 65536);
  EXPECT_EQ(c.rows, (std::vector<DType>{DType::f32, DType::bf16}));
  EXPECT_EQ(c.dense, (std::vector<DensePrecision>{DensePrecision::tf32}));
  EXPECT_DOUBLE_EQ(c.headroom, 0.2);
  EXPECT_EQ(c.min_batch, kDefaultMinBatch);  // not in the file
  EXPECT_DOUBLE_EQ(c.lower_precision_gain, kDefaultLowerPrecisionGain);
}

TEST(ConstraintsFile, RejectsWhatItCannotUse) {
  expect_error("typo.toml", "[plan]\nmax_bach = 65536\n", "plan.max_bach");
  expect_error("type.toml", "[plan]\nmax_batch = \"big\"\n", "plan.max_batch");
  expect_error("rows.toml", "[plan]\nrows = [\"int8\"]\n", "plan.rows");
  expect_error("dense.toml", "[plan]\ndense = [\"fp8\"]\n", "plan.dense");
  expect_error("headroom.toml", "[plan]\nheadroom = 1.5\n", "headroom");
  expect_error("empty.toml", "[other]\nx = 1\n", "[plan]");
}

}  // namespace
}  // namespace hetrec::test
