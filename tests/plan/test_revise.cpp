// Model revisions (plan/revise.h): with hashed ids and memory to spare the rows grow by
// the largest factor that keeps the raw id space and the cost bound; a larger DCN rank
// is proposed while it is cheap; nothing is proposed without hashed ids on a model that
// has no rank to grow; tight memory stops the row growth.
#include <gtest/gtest.h>

#include "core/error.h"
#include "plan/revise.h"
#include "plan_test_support.h"

namespace hetrec::test {
namespace {

Workload small_workload() { return Workload{small_model(), mlperf_optim(), IdDistribution{IdLaw::zipf, 1.05}}; }

TEST(Revise, HashedTablesGrowAndTheRankWithThem) {
  const PlanTarget h200 = shipped_target("h200_sxm");
  RevisionOptions o;
  o.raw_ids_per_row = 16;
  const std::vector<ModelRevision> r = propose_revisions(small_workload(), h200, PlanConstraints{}, o);
  ASSERT_GE(r.size(), 1u);
  EXPECT_GT(r[0].model.tables[0].rows, 1000);
  EXPECT_EQ(r[0].model.tables[0].rows * r[0].raw_ids_per_row, 1000 * 16);  // the raw space is kept
  EXPECT_LE(r[0].cost, o.max_cost);
  EXPECT_NE(r[0].reason.find("hashed"), std::string::npos) << r[0].reason;
  for (const ModelRevision& x : r) {
    EXPECT_TRUE(x.after.fits);
    EXPECT_LE(x.cost, o.max_cost);
  }
  if (r.size() > 1) {
    EXPECT_GT(r[1].model.cross_rank, small_model().cross_rank);
    EXPECT_LT(r[1].model.cross_rank, small_model().interaction_width());
  }
}

TEST(Revise, NothingToGainWithoutHashedIdsOrRank) {
  const PlanTarget h200 = shipped_target("h200_sxm");
  Workload w = small_workload();
  w.model.cross_rank = 0;  // full rank: no rank to grow
  EXPECT_TRUE(propose_revisions(w, h200, PlanConstraints{}, RevisionOptions{}).empty());
  // The full MLPerf model on the H100 with hashed ids: doubled fp32 or 16-bit rows do not fit.
  const PlanTarget h100 = shipped_target("h100_sxm");
  RevisionOptions o;
  o.raw_ids_per_row = 4;
  Workload mlperf{mlperf_model(), mlperf_optim(), IdDistribution{IdLaw::zipf, 1.05}};
  mlperf.model.cross_rank = 0;
  EXPECT_TRUE(propose_revisions(mlperf, h100, PlanConstraints{}, o).empty());
  o.raw_ids_per_row = 0;
  EXPECT_THROW(propose_revisions(w, h200, PlanConstraints{}, o), ConfigError);
}

}  // namespace
}  // namespace hetrec::test
