// Data-parallel training against the single-process model: every rank trains the
// distributed model on its slice of the same global batches, and also trains the plain
// single-process model (make_cpu_model) on the whole batches; after a few steps the
// gathered full state (dense parameters, optimizer slots, every table and accumulator)
// must equal the reference within fp32 reduction-order tolerance: |a - b| <= 2e-6 +
// 1e-4 |b| (the sums of gradients over ranks and of row_wise partial pools are added in
// a different order than in one process; nothing else differs). Run with 1, 2 and 4
// ranks, for every sharding type, every sparse optimizer, both architectures.
//
// A bf16 exchange (dist::ShardingPlan::exchange_dtype) rounds every routed pooled vector
// and its gradient, which the single-process model does not: its reference is the
// distributed model with the same exchange over a group of one, which rounds the same
// values (checked to differ from the fp32 model, so the rounding is seen to happen).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "core/rng.h"
#include "dist/process_group.h"
#include "dist/sharding.h"
#include "model/dlrm.h"
#include "sharding_test_support.h"
#include "trajectory_drift.h"

namespace hetrec {
namespace {

constexpr double kTimeoutS = 120.0;
constexpr double kAbsTol = 2e-6;
constexpr double kRelTol = 1e-4;

ModelConfig small_model(Arch arch) {
  ModelConfig m;
  m.arch = arch;
  m.num_dense = 4;
  m.embedding_dim = 8;  // column_wise over 4 ranks: 2 columns each
  const int64_t rows[] = {37, 50, 8, 23};
  for (int t = 0; t < 4; ++t) {
    TableConfig tc;
    tc.name = "t" + std::to_string(t);
    tc.rows = rows[t];
    tc.pooling = t % 2 == 1 ? Pooling::mean : Pooling::sum;
    m.tables.push_back(tc);
  }
  m.bottom_mlp = {8};
  m.top_mlp = {8, 1};
  m.cross_layers = 2;
  m.init_seed = 11;
  return m;
}

// A random global batch: bags of 0 to 3 ids (empty ones included), Zipf-free uniform ids
// with frequent repeats (the tables are small), random dense features and labels.
Batch random_batch(const ModelConfig& m, int64_t size, uint64_t step) {
  Rng rng(777, step);
  Batch b;
  b.reset(size, m.num_dense, m.num_tables());
  b.first_sample = static_cast<int64_t>(step) * size;
  for (auto& x : b.dense) x = static_cast<float>(rng.normal());
  for (auto& y : b.labels) y = rng.uniform() < 0.4 ? 1.0f : 0.0f;
  for (int t = 0; t < m.num_tables(); ++t)
    for (int64_t s = 0; s < size; ++s) {
      const auto len = static_cast<int>(rng.below(4));
      for (int k = 0; k < len; ++k)
        b.ids.push_back(static_cast<int32_t>(rng.below(static_cast<uint64_t>(m.tables[static_cast<std::size_t>(t)].rows))));
      b.offsets[static_cast<std::size_t>(t * size + s + 1)] = static_cast<int32_t>(b.ids.size());
    }
  return b;
}

struct Case {
  std::string name;
  dist::ShardingSpec sharding;
  OptimizerKind sparse;
  Arch arch;
  DType row_dtype = DType::f32;
};

// A bf16 exchange: an fp32 value a few ulps off (reduction order) can round to the
// neighbouring bf16 value: a few bf16 ulps (2^-8 relative) of tolerance.
constexpr double kRelTolBf16Exchange = 1.6e-2;
// A row_wise table's partial sums are rounded one by one on N ranks but as one sum on one
// rank, so the two trajectories drift apart by rounding, which Adagrad's normalised steps
// carry into every parameter. Judged as drift: |a - b| / |b - b0| over a tensor (b0 the
// start), at most kMaxRoundingDrift (measured: at most 0.005 on 1, 2 and 4 ranks); a
// missing or misplaced piece drifts by about 1.
constexpr double kMaxRoundingDrift = 0.02;


// 16-bit rows are rounded stochastically with the same random bits on both sides, but an
// fp32 value a few ulps off can round to the neighbouring 16-bit value: one fp16 ulp
// (2^-10 relative) of tolerance for the tables.
constexpr double kRelTol16 = 2e-3;

dist::ShardingSpec all_of(dist::ShardingType type) {
  dist::ShardingSpec s;
  s.default_type = type;
  return s;
}

void train_and_compare(const Case& c) {
  auto group = dist::make_process_group(kTimeoutS);
  dist::SingleProcessGroup alone;
  ModelConfig model = small_model(c.arch);
  model.row_dtype = c.row_dtype;
  OptimConfig optim;
  optim.dense = OptimizerKind::adagrad;
  optim.sparse = c.sparse;
  optim.lr = 0.05;
  optim.sparse_lr = 0.3;
  optim.adagrad_initial_accumulator = 0.01;
  const auto plan = dist::plan_sharding(c.sharding, model.tables, model.embedding_dim, group->size());
  auto distributed = make_distributed_cpu_model(model, optim, plan, *group);
  // A bf16 exchange's reference rounds as it does, on one rank.
  const bool bf16_exchange = c.sharding.exchange_dtype == DType::bf16;
  std::unique_ptr<Model> reference;
  std::unique_ptr<DistributedModel> reference_one_rank;
  if (bf16_exchange)
    reference_one_rank = make_distributed_cpu_model(
        model, optim, dist::plan_sharding(testing::one_rank_spec(c.sharding), model.tables, model.embedding_dim, 1), alone);
  else
    reference = make_cpu_model(model, optim);
  Model& ref_model = bf16_exchange ? static_cast<Model&>(*reference_one_rank) : *reference;
  bool row_wise = false;
  for (const dist::TableShard& t : plan.tables) row_wise = row_wise || t.type == dist::ShardingType::row_wise;
  const bool split_rounding = bf16_exchange && row_wise && group->size() > 1;
  const double loss_tol = split_rounding ? 1e-2 : bf16_exchange ? 1e-3 : 1e-5;
  const double score_tol = split_rounding ? 5e-2 : bf16_exchange ? 1e-3 : 1e-4;
  const auto start =
      bf16_exchange ? testing::copied_state(reference_one_rank->gather_full_state()) : std::vector<NamedTensor>{};
  // Step 2's batch of 3 leaves rank 0 of 4 without samples (the end of an epoch).
  for (uint64_t step = 0; step < 4; ++step) {
    const Batch batch = random_batch(model, step == 2 ? 3 : 16, step);
    const StepRates rates = scheduled_rates(optim, static_cast<int64_t>(step));
    const double loss = distributed->train_step(batch, rates);
    const double ref_loss = ref_model.train_step(batch, rates);
    EXPECT_NEAR(loss, ref_loss, loss_tol * (1 + std::abs(ref_loss))) << c.name << " step " << step;
  }
  // Predictions of the whole batch on every rank (also of a batch smaller than the job).
  for (int64_t size : {13, 2}) {
    const Batch eval = random_batch(model, size, 99);
    std::vector<float> scores(static_cast<std::size_t>(size), NAN), ref_scores(static_cast<std::size_t>(size), NAN);
    distributed->predict(eval, scores);
    ref_model.predict(eval, ref_scores);
    for (std::size_t i = 0; i < scores.size(); ++i) EXPECT_NEAR(scores[i], ref_scores[i], score_tol) << c.name;
  }

  const auto full = distributed->gather_full_state();
  const auto ref = bf16_exchange ? reference_one_rank->gather_full_state() : reference->state();
  ASSERT_EQ(full.size(), ref.size()) << c.name;
  for (std::size_t k = 0; k < ref.size(); ++k) {
    ASSERT_EQ(full[k].name, ref[k].name) << c.name;
    ASSERT_EQ(full[k].tensor.shape(), ref[k].tensor.shape()) << c.name << " " << ref[k].name;
    if (ref[k].tensor.dtype() == DType::i64) {
      EXPECT_EQ(full[k].tensor.data<int64_t>()[0], ref[k].tensor.data<int64_t>()[0]);
      continue;
    }
    const bool half = ref[k].tensor.dtype() == DType::f16;
    const auto value = testing::state_value;
    if (split_rounding) {
      const double d = testing::drift(full[k].tensor, ref[k].tensor, start[k].tensor);
      EXPECT_LE(d, kMaxRoundingDrift) << c.name << ": " << ref[k].name << " drifted from the one-rank model";
      continue;
    }
    const double rel = bf16_exchange ? kRelTolBf16Exchange : half ? kRelTol16 : kRelTol;
    int bad = 0;
    int64_t differing = 0;
    for (int64_t i = 0; i < ref[k].tensor.numel(); ++i) {
      const double a = value(full[k].tensor, i), b = value(ref[k].tensor, i);
      differing += a != b;
      if (!(std::abs(a - b) <= kAbsTol + rel * std::abs(b)) && bad++ < 3)
        ADD_FAILURE() << c.name << ": " << ref[k].name << "[" << i << "] = " << a << ", single process " << b
                      << " (rank " << group->rank() << " of " << group->size() << ")";
    }
    // The same rounding draws: a 16-bit element differs only where its fp32 value sat
    // within a few ulps of a rounding threshold, so almost none differ (wrong draws
    // would change about half of the updated elements).
    if (half) {
      EXPECT_LE(differing * 100, ref[k].tensor.numel()) << c.name << ": " << ref[k].name << ": " << differing;
    }
  }
}

TEST(ShardedTraining, EveryShardingTypeAndSparseOptimizerMatchesOneProcess) {
  using dist::ShardingType;
  for (ShardingType type : {ShardingType::table_wise, ShardingType::row_wise, ShardingType::column_wise,
                            ShardingType::replicated})
    for (OptimizerKind sparse : {OptimizerKind::sgd, OptimizerKind::adagrad, OptimizerKind::rowwise_adagrad})
      train_and_compare({std::string(dist::sharding_type_name(type)) + "/" + std::to_string(static_cast<int>(sparse)),
                         all_of(type), sparse, Arch::dlrm});
}

TEST(ShardedTraining, Fp16RowsMatchOneProcess) {
  using dist::ShardingType;
  for (ShardingType type : {ShardingType::table_wise, ShardingType::row_wise, ShardingType::column_wise,
                            ShardingType::replicated})
    train_and_compare({std::string("fp16/") + dist::sharding_type_name(type), all_of(type),
                       type == ShardingType::column_wise ? OptimizerKind::adagrad : OptimizerKind::rowwise_adagrad,
                       Arch::dlrm, DType::f16});
}

TEST(ShardedTraining, MixedPlanWithDcnV2MatchesOneProcess) {
  dist::ShardingSpec spec = all_of(dist::ShardingType::row_wise);
  spec.tables["t0"] = {dist::ShardingType::table_wise, 0};
  spec.tables["t1"] = {dist::ShardingType::column_wise, -1};
  spec.tables["t2"] = {dist::ShardingType::replicated, -1};
  train_and_compare({"mixed", spec, OptimizerKind::rowwise_adagrad, Arch::dcnv2});
}

// Row blocks of unequal size for a job of n ranks: a one-row first block (where skewed ids
// are hot), the rest of the rows split evenly.
std::vector<int64_t> uneven_row_bounds(int64_t rows, int n) {
  std::vector<int64_t> b{0};
  for (int r = 1; r < n; ++r) b.push_back(1 + (rows - 1) * (r - 1) / (n - 1));
  b.push_back(rows);
  return b;
}

TEST(ShardedTraining, UnevenRowBlocksMatchOneProcess) {
  auto group = dist::make_process_group(kTimeoutS);
  const ModelConfig model = small_model(Arch::dcnv2);
  dist::ShardingSpec spec = all_of(dist::ShardingType::row_wise);
  for (const TableConfig& t : model.tables)
    spec.tables[t.name] = {dist::ShardingType::row_wise, -1, uneven_row_bounds(t.rows, group->size())};
  const dist::ShardingPlan plan = dist::plan_sharding(spec, model.tables, 8, group->size());
  for (std::size_t t = 0; t < plan.tables.size(); ++t) {
    const auto bounds = uneven_row_bounds(model.tables[t].rows, group->size());
    for (std::size_t r = 0; r + 1 < bounds.size(); ++r) {
      EXPECT_EQ(plan.tables[t].row_begin[r], bounds[r]);
      EXPECT_EQ(plan.tables[t].row_end[r], bounds[r + 1]);
    }
  }
  train_and_compare({"uneven row blocks", spec, OptimizerKind::rowwise_adagrad, Arch::dcnv2});
  spec.exchange_dtype = DType::bf16;
  train_and_compare({"uneven row blocks, bf16 exchange", spec, OptimizerKind::adagrad, Arch::dlrm});
}

// The rounding of a bf16 exchange is real: the one-rank model with it ends away from the
// fp32 single-process model by more than reduction order explains, but within the drift
// that rounding explains.
void expect_bf16_exchange_rounds(const dist::ShardingSpec& spec, Arch arch) {
  ModelConfig model = small_model(arch);
  OptimConfig optim;
  optim.dense = OptimizerKind::adagrad;
  optim.sparse = OptimizerKind::adagrad;
  optim.lr = 0.05;
  optim.sparse_lr = 0.3;
  optim.adagrad_initial_accumulator = 0.01;
  dist::SingleProcessGroup alone;
  auto rounded = make_distributed_cpu_model(model, optim, dist::plan_sharding(spec, model.tables, 8, 1), alone);
  auto exact = make_cpu_model(model, optim);
  const auto start = testing::copied_state(exact->state());
  for (uint64_t step = 0; step < 4; ++step) {
    const Batch batch = random_batch(model, 16, step);
    const StepRates rates = scheduled_rates(optim, static_cast<int64_t>(step));
    const double a = rounded->train_step(batch, rates), b = exact->train_step(batch, rates);
    EXPECT_NEAR(a, b, 1e-2 * (1 + std::abs(b))) << "step " << step;
  }
  const double largest = testing::expect_fp32_drift_within(rounded->gather_full_state(), exact->state(), start,
                                                           kMaxRoundingDrift,
                                                           "further from the fp32 exchange than rounding explains");
  EXPECT_GT(largest, 1e-4) << "a bf16 exchange changed nothing";
}

TEST(ShardedTraining, Bf16ExchangeMatchesOneRankWithTheSameRounding) {
  using dist::ShardingType;
  for (ShardingType type : {ShardingType::table_wise, ShardingType::row_wise, ShardingType::column_wise,
                            ShardingType::replicated}) {
    dist::ShardingSpec spec = all_of(type);
    spec.exchange_dtype = DType::bf16;
    train_and_compare({std::string("bf16 exchange/") + dist::sharding_type_name(type), spec, OptimizerKind::adagrad,
                       Arch::dlrm});
    if (type != ShardingType::replicated) expect_bf16_exchange_rounds(spec, Arch::dlrm);
  }
  dist::ShardingSpec mixed = all_of(dist::ShardingType::row_wise);
  mixed.tables["t0"] = {dist::ShardingType::table_wise, 0};
  mixed.tables["t1"] = {dist::ShardingType::column_wise, -1};
  mixed.tables["t2"] = {dist::ShardingType::replicated, -1};
  mixed.exchange_dtype = DType::bf16;
  train_and_compare({"bf16 exchange/mixed", mixed, OptimizerKind::rowwise_adagrad, Arch::dcnv2});
  expect_bf16_exchange_rounds(mixed, Arch::dcnv2);
}

TEST(ShardedTraining, PlanErrorsNameTheKey) {
  auto group = dist::make_process_group(kTimeoutS);
  const ModelConfig model = small_model(Arch::dlrm);
  const int n = group->size();
  dist::ShardingSpec unknown = all_of(dist::ShardingType::table_wise);
  unknown.tables["nope"] = {dist::ShardingType::row_wise, -1};
  EXPECT_THROW(dist::plan_sharding(unknown, model.tables, 8, n), ConfigError);
  try {
    dist::plan_sharding(unknown, model.tables, 8, n);
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("recipe.sharding.tables.nope"), std::string::npos) << e.what();
  }
  // Row bounds: one per rank and the end, from 0 to the rows, increasing; row_wise only.
  const auto expect_row_bounds_error = [&](const std::vector<int64_t>& bounds, dist::ShardingType type,
                                           const std::string& says) {
    dist::ShardingSpec spec = all_of(dist::ShardingType::table_wise);
    spec.tables["t1"] = {type, -1, bounds};
    try {
      dist::plan_sharding(spec, model.tables, 8, n);
      ADD_FAILURE() << "no error for row bounds of " << bounds.size() << " values";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("recipe.sharding.tables.t1.row_bounds"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  std::vector<int64_t> good = uneven_row_bounds(50, n);
  expect_row_bounds_error(std::vector<int64_t>(good.begin(), good.end() - 1), dist::ShardingType::row_wise, "expected");
  std::vector<int64_t> short_end = good;
  short_end.back() = 49;
  expect_row_bounds_error(short_end, dist::ShardingType::row_wise, "end at the table's 50 rows");
  std::vector<int64_t> repeated = good;
  repeated.insert(repeated.begin() + 1, 0);
  repeated.pop_back();
  repeated.back() = 50;
  if (n > 1) expect_row_bounds_error(repeated, dist::ShardingType::row_wise, "must increase");
  expect_row_bounds_error(good, dist::ShardingType::column_wise, "only a row_wise table");
  dist::ShardingSpec owner = all_of(dist::ShardingType::table_wise);
  owner.tables["t1"] = {dist::ShardingType::table_wise, n};
  try {
    dist::plan_sharding(owner, model.tables, 8, n);
    ADD_FAILURE() << "expected a ConfigError for owner rank " << n;
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("recipe.sharding.tables.t1.rank"), std::string::npos) << e.what();
  }
  // Row-wise over more ranks than rows, column-wise over more ranks than column pairs.
  try {
    dist::plan_sharding(all_of(dist::ShardingType::row_wise), model.tables, 8, 9);
    ADD_FAILURE() << "expected a ConfigError: table t2 has 8 rows";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("recipe.sharding.tables.t2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("fewer than the 9 ranks"), std::string::npos) << e.what();
  }
  EXPECT_THROW(dist::plan_sharding(all_of(dist::ShardingType::column_wise), model.tables, 8, 5), ConfigError);
  EXPECT_THROW(dist::parse_sharding_type("diagonal", "recipe.sharding.default"), ConfigError);
  dist::ShardingSpec wide = all_of(dist::ShardingType::table_wise);
  wide.exchange_dtype = DType::f16;
  try {
    dist::plan_sharding(wide, model.tables, 8, n);
    ADD_FAILURE() << "expected a ConfigError for an fp16 exchange";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("recipe.sharding.exchange_dtype"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace hetrec
