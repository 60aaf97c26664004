// The README's main job: the demo config trains to within 0.03 of the synthetic
// teacher's Bayes-optimal AUC, and `hetrec eval` on its checkpoint reproduces the AUC.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_test_support.h"

using namespace hetrec::test;
namespace fs = std::filesystem;

TEST(Demo, ReachesTheTeacherAucAndEvalReproducesIt) {
  const auto dir = scratch_dir("demo");
  const std::string metrics = (dir / "metrics.jsonl").string();
  auto r = run_hetrec("train --config configs/demo.toml --set train.progress=off --set train.metrics_path='" + metrics +
                          "' --set train.checkpoint_dir='" + (dir / "ckpt").string() + "'",
                      dir);
  ASSERT_EQ(r.code, 0) << r.err;
  nlohmann::json final_record;
  std::ifstream in(metrics);
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line);
    if (j["type"] == "final") final_record = j;
  }
  ASSERT_TRUE(final_record.contains("auc")) << slurp(metrics);
  const double auc = final_record["auc"], bayes = final_record["bayes_optimal_auc"];
  std::printf("demo: eval AUC %.5f, Bayes-optimal %.5f, gap %.5f\n", auc, bayes, bayes - auc);
  EXPECT_LT(bayes - auc, 0.03);
  EXPECT_GT(bayes - auc, -0.005);  // no model beats the teacher beyond sampling noise
  const std::string ckpt = final_record.contains("step") ? (dir / "ckpt").string() : "";
  r = run_hetrec("eval --config configs/demo.toml --set train.log_level=warn --checkpoint '" + ckpt +
                     "/ckpt-000000001954.hck'",
                 dir);
  ASSERT_EQ(r.code, 0) << r.err;
  char expect[32];
  std::snprintf(expect, sizeof expect, "eval AUC    %.5f", auc);
  EXPECT_NE(r.out.find(expect), std::string::npos) << r.out;
  fs::remove_all(dir);
}
