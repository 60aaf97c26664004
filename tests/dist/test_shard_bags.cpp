// Cutting a rank's shard bags from a batch against a plain reference: whole tables keep
// their bags, row blocks keep only their ids (renumbered), sample ranges, empty bags, and
// ids outside a row-blocked table named in the error.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "data/batch_slice.h"
#include "dist/shard_bags.h"

namespace hetrec {
namespace {

Batch random_batch(int64_t size, const std::vector<int64_t>& rows, uint64_t seed) {
  Rng rng(seed, 3);
  Batch b;
  b.reset(size, 2, static_cast<int>(rows.size()));
  for (float& x : b.dense) x = static_cast<float>(rng.uniform());
  for (float& y : b.labels) y = rng.uniform() < 0.5 ? 1.0f : 0.0f;
  for (std::size_t t = 0; t < rows.size(); ++t)
    for (int64_t s = 0; s < size; ++s) {
      const auto len = rng.below(5);  // empty bags included
      for (uint64_t k = 0; k < len; ++k) b.ids.push_back(static_cast<int32_t>(rng.below(static_cast<uint64_t>(rows[t]))));
      b.offsets[t * static_cast<std::size_t>(size) + static_cast<std::size_t>(s) + 1] = static_cast<int32_t>(b.ids.size());
    }
  return b;
}

// The bag of shard k, sample b of `out`, as a list.
std::vector<int32_t> bag(const Batch& out, int k, int64_t b) {
  return {out.ids.begin() + out.bag_begin(k, b), out.ids.begin() + out.bag_end(k, b)};
}

void expect_cut_matches_reference(const Batch& batch, const std::vector<dist::ShardLookup>& shards, int64_t begin,
                                  int64_t count, Batch& out) {
  dist::cut_shard_bags(batch, shards, begin, count, out);
  const auto num = static_cast<int>(shards.size());
  ASSERT_EQ(out.size, count);
  ASSERT_EQ(out.num_tables, num);
  EXPECT_EQ(out.num_dense, 0);
  EXPECT_TRUE(out.dense.empty());
  EXPECT_EQ(out.first_sample, batch.first_sample + begin);
  ASSERT_EQ(out.offsets.size(), static_cast<std::size_t>(num * count + 1));
  EXPECT_EQ(out.offsets.front(), 0);
  EXPECT_EQ(static_cast<std::size_t>(out.offsets.back()), out.ids.size());
  for (int k = 0; k < num; ++k) {
    const dist::ShardLookup& s = shards[static_cast<std::size_t>(k)];
    for (int64_t b = 0; b < count; ++b) {
      std::vector<int32_t> expected;
      for (int64_t i = batch.bag_begin(s.table, begin + b); i < batch.bag_end(s.table, begin + b); ++i) {
        const int32_t id = batch.ids[static_cast<std::size_t>(i)];
        if (!s.row_block) expected.push_back(id);
        else if (id >= s.row_begin && id < s.row_end) expected.push_back(static_cast<int32_t>(id - s.row_begin));
      }
      ASSERT_EQ(bag(out, k, b), expected) << "shard " << k << " sample " << b << " of [" << begin << ", +" << count << ")";
    }
  }
}

const std::vector<dist::ShardLookup> kShards = {
    {2, true, 30, 70, 100, "c"},  // a row block in the middle
    {0, false, 0, 40, 40, "a"},   // a whole table
    {2, true, 0, 30, 100, "c"},   // the first block of the same table
    {1, false, 0, 7, 7, "b"},
};

TEST(ShardBags, WholeTablesAndRowBlocksMatchAReference) {
  const Batch batch = random_batch(23, {40, 7, 100}, 1);
  Batch out;
  out.ids.assign(5, -1);  // reused buffers: stale contents must not leak through
  for (auto [begin, count] : {std::pair<int64_t, int64_t>{0, 23}, {5, 11}, {22, 1}})
    expect_cut_matches_reference(batch, kShards, begin, count, out);
}

TEST(ShardBags, LargeBatchesSplitIntoChunksMatchAReference) {
  // Several chunks of samples per shard (the parallel split), and a range that starts
  // and ends inside chunks.
  const Batch batch = random_batch(9001, {40, 7, 100}, 5);
  Batch out;
  expect_cut_matches_reference(batch, kShards, 0, 9001, out);
  expect_cut_matches_reference(batch, kShards, 1234, 5000, out);
}

TEST(ShardBags, RowBlocksPartitionEveryId) {
  const std::vector<int64_t> rows = {1000};
  const Batch batch = random_batch(64, rows, 2);
  int64_t total = 0;
  for (int r = 0; r < 3; ++r) {
    const int64_t lo = 1000 * r / 3, hi = 1000 * (r + 1) / 3;
    Batch out;
    dist::cut_shard_bags(batch, {{0, true, lo, hi, 1000, "t"}}, 0, 64, out);
    total += static_cast<int64_t>(out.ids.size());
    for (int32_t id : out.ids) EXPECT_TRUE(id >= 0 && id < hi - lo) << id;
  }
  EXPECT_EQ(total, static_cast<int64_t>(batch.ids.size()));
}

TEST(ShardBags, IdOutsideARowBlockedTableIsNamed) {
  Batch batch = random_batch(8, {50, 9}, 3);
  // Id 9 into table 1's first bag (table 1 has 9 rows).
  batch.ids.insert(batch.ids.begin() + batch.bag_begin(1, 0), 9);
  for (std::size_t i = 8 + 1; i < batch.offsets.size(); ++i) ++batch.offsets[i];
  Batch out;
  try {
    dist::cut_shard_bags(batch, {{1, true, 0, 5, 9, "small"}}, 0, 8, out);
    ADD_FAILURE() << "expected a DataError";
  } catch (const DataError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("\"small\""), std::string::npos) << what;
    EXPECT_NE(what.find("id 9"), std::string::npos) << what;
    EXPECT_NE(what.find("[0, 9)"), std::string::npos) << what;
  }
}

TEST(ShardBags, SelectSamplesRepeatsAndReorders) {
  const Batch batch = random_batch(6, {30, 4}, 4);
  const Batch picked = select_samples(batch, {5, 5, 0});
  ASSERT_EQ(picked.size, 3);
  for (int t = 0; t < 2; ++t) {
    const int64_t from[] = {5, 5, 0};
    for (int64_t b = 0; b < 3; ++b) {
      const std::vector<int32_t> want(batch.ids.begin() + batch.bag_begin(t, from[b]),
                                      batch.ids.begin() + batch.bag_end(t, from[b]));
      EXPECT_EQ(bag(picked, t, b), want);
    }
  }
  EXPECT_EQ(picked.labels[2], batch.labels[0]);
  EXPECT_EQ(picked.dense[2 * 2 + 1], batch.dense[1]);
}

}  // namespace
}  // namespace hetrec
