// `hetrec tune` through the real program: errors that come before any device work.
#include <gtest/gtest.h>

#include "cli_test_support.h"

using namespace hetrec::test;

TEST(CliTune, UnknownKernelIsAConfigErrorNamingTheOption) {
  const auto dir = scratch_dir("tune");
  const auto r = run_hetrec("tune --kernel no_such_kernel --budget 0.1 --out-dir " + dir.string(), dir);
  EXPECT_EQ(r.code, 2) << r.err;
  // A CUDA build names the option; a build without the GPU backend says it has none.
  EXPECT_TRUE(r.err.find("--kernel no_such_kernel") != std::string::npos ||
              r.err.find("no GPU backend") != std::string::npos)
      << r.err;
}

TEST(CliTune, NonPositiveBudgetIsRejectedByTheParser) {
  const auto dir = scratch_dir("tune_budget");
  const auto r = run_hetrec("tune --budget 0", dir);
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("--budget"), std::string::npos) << r.err;
}
