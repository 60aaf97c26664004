// The recipe search: constraints are respected, the memory model filters, and the chosen
// recipes differ where the hardware differs (docs/planner.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "core/error.h"
#include "plan/port_comparison.h"
#include "plan/search.h"
#include "plan_test_support.h"

namespace hetrec::test {
namespace {

Workload mlperf_workload() { return Workload{mlperf_model(), mlperf_optim(), IdDistribution{IdLaw::zipf, 1.05}}; }

bool contains(const std::vector<DensePrecision>& v, DensePrecision p) { return std::find(v.begin(), v.end(), p) != v.end(); }
bool contains(const std::vector<DType>& v, DType t) { return std::find(v.begin(), v.end(), t) != v.end(); }

void expect_within(const PlanResult& plan, const PlanConstraints& c, const PlanTarget& t) {
  for (const RecipeEvaluation& e : plan.ranked) {
    EXPECT_GE(e.recipe.batch, c.min_batch);
    EXPECT_LE(e.recipe.batch, c.max_batch);
    EXPECT_TRUE(contains(c.dense, e.recipe.dense));
    EXPECT_TRUE(contains(c.rows, e.recipe.row_dtype));
    EXPECT_TRUE(e.fits);
    EXPECT_TRUE(e.memory.fits(t.hw(), c.headroom));
    EXPECT_LE(e.memory.device_bytes(), (1 - c.headroom) * e.memory.usable_bytes);
    if (!c.allow_host_tables) {
      EXPECT_EQ(e.recipe.host_tables(), 0);
    }
    EXPECT_GT(e.step.samples_per_s, 0.0);
  }
  for (const RecipeEvaluation& e : plan.refused) {
    EXPECT_FALSE(e.memory.fits(t.hw(), c.headroom));
    EXPECT_FALSE(e.refusal.empty());
  }
  for (std::size_t i = 1; i < plan.ranked.size(); ++i) EXPECT_GE(plan.ranked[i - 1].score, plan.ranked[i].score);
}

// The objective is samples/s within the quality constraints: under the defaults the
// H200 looks past MLPerf's batch and takes bf16 rows (measured 2.64 M samples/s at b128k
// with bf16 rows against 2.44 M at b64k with fp32 rows, bench/results/planner-20261130-
// h200-port.json), and each constraint, when given, bounds the choice.
TEST(Search, H200PlansPastTheMlperfBatchWithBf16RowsWhereH100CannotGrow) {
  const Workload w = mlperf_workload();
  const PlanConstraints c;
  const PlanTarget h100 = shipped_target("h100_sxm"), h200 = shipped_target("h200_sxm");
  const PlanResult on_h200 = plan_recipes(w, h200, c);
  const PlanResult on_h100 = plan_recipes(w, h100, c);
  expect_within(on_h200, c, h200);
  expect_within(on_h100, c, h100);

  const Recipe& big = on_h200.best().recipe;
  EXPECT_GE(big.batch, 131072);
  EXPECT_EQ(big.row_dtype, DType::bf16);
  EXPECT_EQ(big.host_tables(), 0);
  EXPECT_EQ(big.dense, DensePrecision::bf16);
  EXPECT_DOUBLE_EQ(on_h200.best().score, on_h200.best().step.samples_per_s);  // no precision discount

  // Each constraint, alone, is honoured.
  PlanConstraints mlperf = c;
  mlperf.max_batch = 65536;
  EXPECT_EQ(plan_recipes(w, h200, mlperf).best().recipe.batch, 65536);
  PlanConstraints exact_rows = c;
  exact_rows.rows = {DType::f32};
  const RecipeEvaluation fp32_rows = plan_recipes(w, h200, exact_rows).best();
  EXPECT_EQ(fp32_rows.recipe.row_dtype, DType::f32);
  EXPECT_LT(fp32_rows.step.samples_per_s, on_h200.best().step.samples_per_s);
  PlanConstraints tf32 = c;
  tf32.dense = {DensePrecision::fp32, DensePrecision::tf32};
  const Recipe no16 = plan_recipes(w, h200, tf32).best().recipe;
  EXPECT_EQ(no16.dense, DensePrecision::tf32);
  PlanConstraints roomy = c;
  roomy.headroom = 0.5;
  const RecipeEvaluation half = plan_recipes(w, h200, roomy).best();
  EXPECT_LE(half.memory.device_bytes(), 0.5 * half.memory.usable_bytes);
  EXPECT_LT(half.recipe.batch, big.batch);

  const Recipe& small = on_h100.best().recipe;
  EXPECT_TRUE(small.row_dtype != DType::f32 || small.host_tables() > 0);
  // No fp32-row recipe with every table in HBM fits the H100, nor a batch past 65536.
  for (const RecipeEvaluation& e : on_h100.ranked) {
    EXPECT_NE(e.recipe.row_dtype, DType::f32);
    EXPECT_LE(e.recipe.batch, 65536);
  }
  EXPECT_FALSE(on_h100.refused.empty());

  // Ported to the H100 the H200's recipe is refused; the other way it runs.
  const PortComparison down = compare_direct_port(w, on_h200, on_h100, h100, c);
  EXPECT_FALSE(down.ported.fits);
  EXPECT_EQ(down.ratio, 0.0);
  EXPECT_NE(down.ported.refusal.find("embedding rows"), std::string::npos);
  const PortComparison up = compare_direct_port(w, on_h100, on_h200, h200, c);
  EXPECT_TRUE(up.ported.fits);
  ASSERT_TRUE(up.native.has_value());
  EXPECT_NEAR(up.ratio, up.ported.step.samples_per_s / up.native->step.samples_per_s, 1e-12);
  EXPECT_EQ(up.ported.recipe.hardware, "h200_sxm");
  EXPECT_EQ(up.ported.recipe.row_dtype, small.row_dtype);
}

TEST(Search, ConstraintsBoundTheCandidates) {
  const Workload w = mlperf_workload();
  const PlanTarget h100 = shipped_target("h100_sxm");
  PlanConstraints c;
  c.max_batch = 16384;
  c.min_batch = 4096;
  c.dense = {DensePrecision::fp32};
  c.rows = {DType::bf16};
  c.headroom = 0.25;
  const PlanResult p = plan_recipes(w, h100, c);
  expect_within(p, c, h100);
  EXPECT_EQ(p.ranked.size(), 3u);  // 4096, 8192, 16384
  EXPECT_EQ(p.best().recipe.batch, 16384);
  EXPECT_EQ(p.best().recipe.row_dtype, DType::bf16);
  EXPECT_EQ(p.best().recipe.dense, DensePrecision::fp32);

  // fp32 rows only: nothing fits the H100 in HBM, and the refusal names the tables.
  c = PlanConstraints{};
  c.rows = {DType::f32};
  const PlanResult none = plan_recipes(w, h100, c);
  EXPECT_TRUE(none.ranked.empty());
  try {
    (void)none.best();
    FAIL() << "a recipe was chosen although none fits";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("h100_sxm"), std::string::npos) << what;
    EXPECT_NE(what.find("embedding rows"), std::string::npos) << what;
  }
  // ... unless tables may move to host memory: then the coldest large tables go.
  c.allow_host_tables = true;
  const PlanResult host = plan_recipes(w, h100, c);
  expect_within(host, c, h100);
  const Recipe& r = host.best().recipe;
  EXPECT_GT(r.host_tables(), 0);
  EXPECT_EQ(r.row_dtype, DType::f32);
  for (std::size_t t = 0; t < r.placement.size(); ++t)
    if (r.placement[t] == TablePlacement::host) {
      EXPECT_GE(w.model.tables[t].rows, 3000000) << "table " << t;
    }
}

TEST(Search, LowerPrecisionMustPayForItself) {
  const Workload w = mlperf_workload();
  const PlanTarget h200 = shipped_target("h200_sxm");
  PlanConstraints c;
  c.lower_precision_gain = 0.0;  // pure throughput: 16-bit rows read fewer bytes
  const PlanResult fastest = plan_recipes(w, h200, c);
  EXPECT_NE(fastest.best().recipe.row_dtype, DType::f32);
  c.lower_precision_gain = 10.0;  // nothing is worth 11x: full precision everywhere
  const PlanResult exact = plan_recipes(w, h200, c);
  EXPECT_EQ(exact.best().recipe.row_dtype, DType::f32);
  EXPECT_EQ(exact.best().recipe.dense, DensePrecision::fp32);
  EXPECT_EQ(precision_steps(exact.best().recipe), 0);
}

TEST(Search, CandidateBatchesAndHostOrder) {
  PlanConstraints c;
  c.min_batch = 1000;
  c.max_batch = 10000;
  EXPECT_EQ(candidate_batches(c), (std::vector<int64_t>{1024, 2048, 4096, 8192, 10000}));
  c.min_batch = c.max_batch = 65536;
  EXPECT_EQ(candidate_batches(c), (std::vector<int64_t>{65536}));
  const std::vector<int> order = host_placement_order(mlperf_model());
  // Fewest lookups per row first: the 40 M-row tables of hotness 3, 7, 12 and 27, then the
  // 3.07 M-row table of hotness 3 (1e-6 per row), then the 40 M-row one of hotness 100.
  EXPECT_EQ(std::vector<int>(order.begin(), order.begin() + 6), (std::vector<int>{0, 9, 19, 21, 10, 20}));
}

TEST(Search, RejectsBadConstraints) {
  PlanConstraints c;
  c.headroom = 1.0;
  EXPECT_THROW(validate_constraints(c), ConfigError);
  c = PlanConstraints{};
  c.max_batch = 10;
  EXPECT_THROW(validate_constraints(c), ConfigError);
  c = PlanConstraints{};
  c.dense.clear();
  EXPECT_THROW(validate_constraints(c), ConfigError);
  c = PlanConstraints{};
  c.rows = {DType::i32};
  EXPECT_THROW(validate_constraints(c), ConfigError);
  c = PlanConstraints{};
  c.lower_precision_gain = -0.5;
  EXPECT_THROW(validate_constraints(c), ConfigError);
}

}  // namespace
}  // namespace hetrec::test
