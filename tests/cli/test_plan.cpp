// `hetrec plan` writes recipes that `hetrec train --recipe` runs unchanged, and refuses a
// recipe that does not fit with the largest consumers named.
#include <gtest/gtest.h>

#include "cli_test_support.h"

using namespace hetrec::test;
namespace fs = std::filesystem;

TEST(CliPlan, RecipeRunsUnchangedInTrain) {
  const auto dir = scratch_dir("plan");
  auto r = run_hetrec("plan --config configs/dlrm_dcnv2_mlperf.toml --hw h100_sxm,h200_sxm --out '" +
                          (dir / "plan.toml").string() + "' --svg '" + (dir / "plan.svg").string() + "'",
                      dir);
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  const std::string h100 = slurp(dir / "plan-h100_sxm.toml"), h200 = slurp(dir / "plan-h200_sxm.toml");
  // The 104.5 GB of fp32 rows fit the H200's HBM but not the H100's: the H100 recipe
  // must store the rows in 16 bits, the H200 one keeps fp32.
  EXPECT_NE(h200.find("row_dtype = \"fp32\""), std::string::npos) << h200;
  EXPECT_EQ(h100.find("row_dtype = \"fp32\""), std::string::npos) << h100;
  const std::string svg = slurp(dir / "plan.svg");
  EXPECT_NE(svg.find("<svg"), std::string::npos);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  // The recipe planned for the H100 drives a (small, CPU) training run as is.
  r = run_hetrec("train --config configs/demo.toml --recipe '" + (dir / "plan-h100_sxm.toml").string() +
                     "' --set train.steps=2 --set train.progress=off --set train.log_level=warn"
                     " --set train.eval_samples=1000 --set train.checkpoint_dir='" + (dir / "ckpt").string() + "'",
                 dir);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("steps             2 (131072 samples"), std::string::npos) << r.out;
  fs::remove_all(dir);
}

TEST(CliPlan, PortedRecipeThatDoesNotFitIsRefused) {
  const auto dir = scratch_dir("port");
  const auto r = run_hetrec("plan --config configs/dlrm_dcnv2_mlperf.toml --hw h100_sxm --port-from h200_sxm", dir);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("does not fit: needs"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("largest consumers: embedding rows"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("the ported recipe cannot run"), std::string::npos) << r.out;
  fs::remove_all(dir);
}
