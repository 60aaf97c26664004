// The input sets a model-proposed kernel must pass before it is kept (tune/gate.h): the
// choice of sets (independent random draws, then the edge shapes for kernels that read
// bags), the edge shapes' tables, and the rule that every set must pass. A CPU bag
// pooling with the kind of bug a rewrite brings (an empty bag read as one id, the last
// row of a table taken for out of range) passes the random sets and is caught by an edge
// shape. The device side (tune/gpu/tune_session.cpp) runs the same sets on the GPU
// benches.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "tune/gate.h"

namespace hetrec::tune {
namespace {

std::vector<TableConfig> workload_tables() {
  std::vector<TableConfig> t(4);
  t[0] = {"t0", 10, 1, false, Pooling::sum};
  t[1] = {"t1", 1000, 3, true, Pooling::mean};
  t[2] = {"t2", 40'000'000, 20, false, Pooling::sum};
  t[3] = {"t3", 3, 2, false, Pooling::sum};
  return t;
}

TEST(VerificationSets, RandomDrawsThenEveryEdgeShape) {
  const uint64_t base = 12345;
  const std::vector<VerificationSet> plain = verification_sets(base, false);
  ASSERT_EQ(plain.size(), static_cast<std::size_t>(kRandomVerificationSets));
  for (const VerificationSet& s : plain) EXPECT_EQ(s.shape, InputShape::random) << s.name;
  const std::vector<VerificationSet> bags = verification_sets(base, true);
  ASSERT_EQ(bags.size(), static_cast<std::size_t>(kRandomVerificationSets) + 3);
  std::set<InputShape> shapes;
  std::set<uint64_t> seeds{base};
  std::set<std::string> names;
  for (const VerificationSet& s : bags) {
    shapes.insert(s.shape);
    seeds.insert(s.seed);
    names.insert(s.name);
  }
  EXPECT_EQ(shapes, (std::set<InputShape>{InputShape::random, InputShape::empty_bags, InputShape::one_row_tables,
                                          InputShape::hot_rows}));
  EXPECT_EQ(seeds.size(), bags.size() + 1);  // independent of each other and of the timing workload's seed
  EXPECT_EQ(names.size(), bags.size());
  EXPECT_EQ(bags[0].name, "random-1");
  EXPECT_EQ(bags.back().name, "hot-rows");
  // Another base: other seeds (a fresh draw every run), the same sets.
  const std::vector<VerificationSet> other = verification_sets(base + 1, true);
  for (std::size_t i = 0; i < bags.size(); ++i) {
    EXPECT_NE(other[i].seed, bags[i].seed);
    EXPECT_EQ(other[i].name, bags[i].name);
  }
}

TEST(VerificationSets, EdgeShapesOfTheWorkloadsTables) {
  const std::vector<TableConfig> w = workload_tables();
  for (InputShape shape :
       {InputShape::random, InputShape::empty_bags, InputShape::one_row_tables, InputShape::hot_rows}) {
    const std::vector<TableConfig> t = verification_tables(w, shape);
    ASSERT_EQ(t.size(), w.size());
    for (std::size_t i = 0; i < t.size(); ++i) {
      EXPECT_EQ(t[i].name, w[i].name);
      EXPECT_EQ(t[i].pooling, w[i].pooling);  // the kernel's shape key is unchanged
      EXPECT_GE(t[i].rows, 1);
      EXPECT_LE(t[i].rows, kVerificationMaxRows);
    }
  }
  const auto random = verification_tables(w, InputShape::random);
  EXPECT_EQ(random[2].rows, kVerificationMaxRows);  // capped
  EXPECT_EQ(random[1].rows, 1000);
  EXPECT_EQ(random[1].hotness, 3);
  const auto empty = verification_tables(w, InputShape::empty_bags);
  EXPECT_EQ(empty[0].hotness, 0);
  EXPECT_EQ(empty[2].hotness, 0);
  EXPECT_FALSE(empty[2].variable_bags);
  EXPECT_EQ(empty[1].hotness, 3);  // the others keep theirs: the batch is not empty
  for (const TableConfig& t : verification_tables(w, InputShape::one_row_tables)) EXPECT_EQ(t.rows, 1);
  for (const TableConfig& t : verification_tables(w, InputShape::hot_rows)) {
    EXPECT_LE(t.rows, kHotRows);
    EXPECT_GE(t.hotness, kHotRowHotness);
  }
  EXPECT_THROW(verification_tables({}, InputShape::random), ConfigError);
}

TEST(VerificationSets, EverySetMustPass) {
  const std::vector<VerificationSet> sets = verification_sets(7, true);
  int calls = 0;
  SetsVerdict v = verify_on_every_set(sets, [&](const VerificationSet&) {
    ++calls;
    return SetCheck{true, "", 1e-7};
  });
  EXPECT_TRUE(v.ok);
  EXPECT_EQ(calls, static_cast<int>(sets.size()));
  EXPECT_EQ(v.sets_passed, v.sets_required);
  EXPECT_DOUBLE_EQ(v.max_abs_error, 1e-7);

  calls = 0;
  v = verify_on_every_set(sets, [&](const VerificationSet& s) {
    ++calls;
    return s.shape == InputShape::one_row_tables ? SetCheck{false, "value 3 off by 2.5", 2.5} : SetCheck{true, "", 0};
  });
  EXPECT_FALSE(v.ok);
  EXPECT_EQ(v.sets_passed, kRandomVerificationSets + 1);  // the random ones and empty-bags, then it stops
  EXPECT_EQ(calls, kRandomVerificationSets + 2);
  EXPECT_NE(v.reason.find("input set one-row-tables (5 of 6): value 3 off by 2.5"), std::string::npos) << v.reason;
  EXPECT_THROW(verify_on_every_set({}, [](const VerificationSet&) { return SetCheck{true, "", 0}; }), InternalError);
}

// ---- a CPU bag pooling checked on the sets, as the device benches check kernels ----

struct Bags {
  std::vector<int32_t> offsets;  // tables x batch + 1, table-major
  std::vector<int32_t> ids;
};

// As tune/gpu/skewed_bags.cpp draws them: fixed or variable bag lengths, ids skewed
// toward low rows.
Bags draw_bags(const std::vector<TableConfig>& tables, int64_t batch, uint64_t seed) {
  Rng rng(seed, 1000);
  Bags b;
  b.offsets.assign(tables.size() * static_cast<std::size_t>(batch) + 1, 0);
  for (std::size_t t = 0; t < tables.size(); ++t)
    for (int64_t s = 0; s < batch; ++s) {
      const int h = tables[t].variable_bags ? 1 + static_cast<int>(rng.uniform() * (2 * tables[t].hotness - 1))
                                            : tables[t].hotness;
      for (int k = 0; k < h; ++k) {
        const double u = rng.uniform();
        b.ids.push_back(static_cast<int32_t>(std::min<double>(tables[t].rows - 1, tables[t].rows * u * u * u)));
      }
      b.offsets[t * batch + s + 1] = static_cast<int32_t>(b.ids.size());
    }
  return b;
}

enum class Bug { none, empty_bag_reads_one_id, last_row_out_of_range };

// Pools row value (row index + 1) over each bag; `bug` is what a rewrite got wrong.
std::vector<double> pool(const std::vector<TableConfig>& tables, const Bags& b, int64_t batch, Bug bug) {
  std::vector<double> out(tables.size() * static_cast<std::size_t>(batch), 0.0);
  for (std::size_t t = 0; t < tables.size(); ++t)
    for (int64_t s = 0; s < batch; ++s) {
      const std::size_t bag = t * batch + s;
      int32_t end = b.offsets[bag + 1];
      if (bug == Bug::empty_bag_reads_one_id) end = std::max(end, b.offsets[bag] + 1);  // a do-while loop
      double sum = 0;
      for (int32_t p = b.offsets[bag]; p < end && p < static_cast<int32_t>(b.ids.size()); ++p) {
        const int64_t limit = bug == Bug::last_row_out_of_range ? tables[t].rows - 1 : tables[t].rows;
        if (b.ids[p] >= 0 && b.ids[p] < limit) sum += b.ids[p] + 1.0;
      }
      const int32_t count = b.offsets[bag + 1] - b.offsets[bag];
      out[bag] = tables[t].pooling == Pooling::mean && count > 0 ? sum / count : sum;
    }
  return out;
}

SetCheck check_pooling(const std::vector<TableConfig>& workload, const VerificationSet& s, Bug bug) {
  const std::vector<TableConfig> tables = verification_tables(workload, s.shape);
  const Bags b = draw_bags(tables, kVerificationBatch, s.seed);
  const std::vector<double> want = pool(tables, b, kVerificationBatch, Bug::none);
  const std::vector<double> got = pool(tables, b, kVerificationBatch, bug);
  SetCheck c{true, "", 0.0};
  for (std::size_t i = 0; i < want.size(); ++i) {
    c.max_abs_error = std::max(c.max_abs_error, std::fabs(got[i] - want[i]));
    if (got[i] != want[i] && c.ok) {
      c.ok = false;
      c.reason = "bag " + std::to_string(i) + ": " + std::to_string(got[i]) + ", expected " + std::to_string(want[i]);
    }
  }
  return c;
}

TEST(VerificationSets, EdgeShapesCatchWhatRandomInputsMiss) {
  // Workload tables whose bags are never empty and whose last rows are (almost) never
  // drawn: the skew puts ids near row 0.
  std::vector<TableConfig> w(3);
  w[0] = {"a", 1'000'000, 2, false, Pooling::sum};
  w[1] = {"b", 5'000'000, 4, true, Pooling::mean};
  w[2] = {"c", 20'000'000, 1, false, Pooling::sum};
  const std::vector<VerificationSet> sets = verification_sets(2024, true);
  std::vector<VerificationSet> random_only(sets.begin(), sets.begin() + kRandomVerificationSets);

  const auto run = [&](const std::vector<VerificationSet>& s, Bug bug) {
    return verify_on_every_set(s, [&](const VerificationSet& v) { return check_pooling(w, v, bug); });
  };
  EXPECT_TRUE(run(sets, Bug::none).ok) << run(sets, Bug::none).reason;

  EXPECT_TRUE(run(random_only, Bug::empty_bag_reads_one_id).ok);  // random bags are never empty
  const SetsVerdict empty = run(sets, Bug::empty_bag_reads_one_id);
  EXPECT_FALSE(empty.ok);
  EXPECT_NE(empty.reason.find("input set empty-bags"), std::string::npos) << empty.reason;

  const SetsVerdict last_row = run(sets, Bug::last_row_out_of_range);
  EXPECT_FALSE(last_row.ok);  // on one-row tables every id is the last row
  EXPECT_LT(last_row.sets_passed, last_row.sets_required);
}

}  // namespace
}  // namespace hetrec::tune
