// Synthetic data whose raw categorical ids outnumber the table rows (data.synthetic.
// raw_ids_per_row): ids stay within the rows, distinct raw ids collide in one row, and the
// teacher scores the raw ids, so samples the model cannot tell apart differ in their
// true probability; bad values are ConfigErrors naming the key.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "core/error.h"
#include "data/synthetic.h"
#include "data_test_util.h"

using namespace hetrec;
using hetrec::testing::table;

namespace {

// One table of 4 rows with one id a sample and two more tables of 50 rows, no dense
// features: a sample's delivered features are its three ids.
ModelConfig tiny_model() {
  ModelConfig m;
  m.num_dense = 0;
  m.tables = {table("a", 4), table("b", 50), table("c", 50)};
  return m;
}

SyntheticConfig config(int64_t raw_ids_per_row) {
  SyntheticConfig c;
  c.train_samples = 20000;
  c.eval_samples = 100;
  c.seed = 5;
  c.zipf_exponent = 0.0;  // uniform: every raw id occurs
  c.raw_ids_per_row = raw_ids_per_row;
  return c;
}

// Largest spread of the teacher's logit over samples that deliver the same ids.
double logit_spread_at_equal_features(const SyntheticSource& s, int64_t samples) {
  std::map<std::vector<int32_t>, std::pair<double, double>> range;  // ids -> (min, max) logit
  SyntheticSample x;
  double spread = 0.0;
  for (int64_t i = 0; i < samples; ++i) {
    s.sample(i, x);
    auto [it, fresh] = range.try_emplace(x.ids, x.logit, x.logit);
    it->second.first = std::min(it->second.first, x.logit);
    it->second.second = std::max(it->second.second, x.logit);
    spread = std::max(spread, it->second.second - it->second.first);
    (void)fresh;
  }
  return spread;
}

TEST(SyntheticRawIds, HashedIntoTheRowsWithCollisions) {
  const SyntheticSource hashed(tiny_model(), config(16), Split::train);
  Batch batch;
  SyntheticSource reader(tiny_model(), config(16), Split::train);
  ASSERT_TRUE(reader.next(batch, 4096));
  for (int t = 0; t < 3; ++t) {
    const int64_t rows = tiny_model().tables[static_cast<std::size_t>(t)].rows;
    for (int64_t i = batch.offsets[static_cast<std::size_t>(t) * 4096];
         i < batch.offsets[static_cast<std::size_t>(t + 1) * 4096]; ++i) {
      EXPECT_GE(batch.ids[static_cast<std::size_t>(i)], 0);
      EXPECT_LT(batch.ids[static_cast<std::size_t>(i)], rows);
    }
  }
  // 64 raw ids share table a's 4 rows: samples with the same delivered ids carry
  // different raw ids, so the teacher's logit differs between them.
  EXPECT_GT(logit_spread_at_equal_features(hashed, 4000), 0.1);
  EXPECT_NE(hashed.describe().find("raw ids 16x the rows"), std::string::npos) << hashed.describe();
}

TEST(SyntheticRawIds, WithoutARawSpaceTheLogitIsAFunctionOfTheIds) {
  const SyntheticSource plain(tiny_model(), config(1), Split::train);
  EXPECT_LT(logit_spread_at_equal_features(plain, 4000), 1e-12);
}

TEST(SyntheticRawIds, BadValuesNameTheKey) {
  for (int64_t bad : {int64_t{0}, int64_t{-3}}) {
    try {
      SyntheticSource s(tiny_model(), config(bad), Split::train);
      FAIL() << bad << " accepted";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("data.synthetic.raw_ids_per_row"), std::string::npos) << e.what();
    }
  }
  ModelConfig big = tiny_model();
  big.tables[1].rows = 40000000;
  try {
    SyntheticSource s(big, config(100), Split::train);
    FAIL() << "a raw space past int32 accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("int32"), std::string::npos) << e.what();
  }
}

}  // namespace
