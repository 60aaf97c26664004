// The planner for N GPUs of one host: the step model's ranks and communication phases
// against hand counts, the memory per rank and the sharding search (recipes and the
// program end to end: test_multi_gpu_plan.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>

#include "plan/comm_model.h"
#include "plan/gpu_model_layout.h"
#include "plan/memory_model.h"
#include "plan/search.h"
#include "plan/sharded_layout.h"
#include "plan/step_model.h"
#include "plan_test_support.h"

namespace hetrec::test {
namespace {

using dist::ShardingType;

double phase_of(const StepPrediction& p, StepPhase ph) { return p.phase(ph); }

TEST(MultiGpuStepModel, OneGpuIsTheSingleDeviceModelAndRanksReuseItsTerms) {
  const ModelConfig m = mlperf_model(2000000);
  const OptimConfig o = mlperf_optim();
  const PlanTarget t = shipped_target("h200_sxm");
  const IdDistribution ids{IdLaw::zipf, 1.05};
  const Recipe single = recipe_of_model(m, 32768, "h200_sxm");

  // gpus = 1: a sharding spec changes nothing (the single-device engine has none).
  Recipe with_spec = single;
  dist::ShardingSpec rows;
  rows.default_type = ShardingType::row_wise;
  apply_sharding(with_spec, m, rows, 1);
  EXPECT_TRUE(with_spec.sharding.empty());
  const StepWork w1 = step_work(m, o, single, t.gemm, ids);
  const StepPrediction p1 = predict_step(w1, t.step);
  const StepPrediction p1b = predict_step(step_work(m, o, with_spec, t.gemm, ids), t.step);
  EXPECT_EQ(p1.step_ms, p1b.step_ms);
  EXPECT_EQ(p1.phase_ms, p1b.phase_ms);
  ASSERT_EQ(p1.rank_step_ms.size(), 1u);
  EXPECT_EQ(p1.rank_step_ms[0], p1.step_ms);
  for (const StepTerm& term : w1.terms) {
    EXPECT_EQ(term.rank, kAllRanks) << term.what;
    EXPECT_FALSE(communication_phase(term.phase)) << term.what;
  }

  // Two GPUs with every table on rank 0: rank 0's embedding phases are exactly the single
  // device's at the global batch, and the dense phases exactly the single device's at
  // half the batch.
  Recipe two = single;
  two.gpus = 2;
  two.sharding.assign(m.tables.size(), TableSharding{ShardingType::table_wise, 0});
  const StepPrediction p2 = predict_step(step_work(m, o, two, t.gemm, ids), t.step);
  EXPECT_EQ(p2.slowest_rank, 0);
  EXPECT_EQ(phase_of(p2, StepPhase::embedding_fwd), phase_of(p1, StepPhase::embedding_fwd));
  EXPECT_EQ(phase_of(p2, StepPhase::embedding_bwd_update), phase_of(p1, StepPhase::embedding_bwd_update));
  const StepPrediction half = predict_step(step_work(m, o, recipe_of_model(m, 16384, "h200_sxm"), t.gemm, ids), t.step);
  for (StepPhase ph : {StepPhase::bottom_mlp_fwd, StepPhase::interaction_fwd, StepPhase::top_mlp_fwd, StepPhase::loss,
                       StepPhase::top_mlp_bwd, StepPhase::interaction_bwd, StepPhase::bottom_mlp_bwd,
                       StepPhase::dense_optimizer})
    EXPECT_EQ(phase_of(p2, ph), phase_of(half, ph)) << step_phase_name(ph);
  for (StepPhase ph : {StepPhase::embedding_exchange, StepPhase::dense_all_reduce, StepPhase::embedding_grad_exchange})
    EXPECT_GT(phase_of(p2, ph), 0.0) << step_phase_name(ph);
  // Rank 1 holds nothing: it waits for rank 0 but has less of its own work.
  ASSERT_EQ(p2.rank_step_ms.size(), 2u);
  EXPECT_LT(p2.rank_step_ms[1], p2.rank_step_ms[0]);
  EXPECT_EQ(p2.step_ms, p2.rank_step_ms[0]);
}

// The embedding stream hides the bottom MLP's forward behind the lookups and exchange,
// and in the backward runs the gradient exchange beside the bottom MLP, then the update
// beside the dense all-reduce and optimizer (after the bottom MLP with fp16 loss scaling).
TEST(MultiGpuStepModel, EmbeddingStreamOverlapsTheDensePhasesItDoesNotNeed) {
  const ModelConfig m = mlperf_model(2000000);
  const OptimConfig o = mlperf_optim();
  const PlanTarget t = shipped_target("h200_sxm");
  const IdDistribution ids{IdLaw::zipf, 1.05};
  for (DensePrecision dense : {DensePrecision::bf16, DensePrecision::fp16}) {
    Recipe two = recipe_of_model(m, 65536, "h200_sxm");
    two.dense = dense;
    two.gpus = 2;
    two.sharding.assign(m.tables.size(), TableSharding{ShardingType::table_wise, 0});
    for (std::size_t i = 1; i < m.tables.size(); i += 2) two.sharding[i].owner = 1;
    StepWork work = step_work(m, o, two, t.gemm, ids);
    EXPECT_TRUE(work.embedding_stream);
    EXPECT_EQ(work.loss_scaled, dense == DensePrecision::fp16);
    const StepPrediction overlapped = predict_step(work, t.step);
    work.embedding_stream = false;
    const StepPrediction serial = predict_step(work, t.step);
    EXPECT_EQ(overlapped.phase_ms, serial.phase_ms);  // the phases themselves are unchanged
    ASSERT_EQ(overlapped.rank_step_ms.size(), 2u);
    for (std::size_t r = 0; r < 2; ++r) {
      // Rank r's phases: the serial step's terms of every rank plus rank r's own.
      std::array<double, kStepPhaseCount> ms{};
      for (const StepTerm& term : work.terms)
        if (term.rank == kAllRanks || term.rank == static_cast<int>(r))
          ms[static_cast<std::size_t>(term.phase)] += term_time_us(term, t.step) * 1e-3;
      const auto at = [&](StepPhase p) { return ms[static_cast<std::size_t>(p)]; };
      const double b = at(StepPhase::bottom_mlp_bwd), x = at(StepPhase::embedding_grad_exchange),
                   u = at(StepPhase::embedding_bwd_update),
                   d = at(StepPhase::dense_all_reduce) + at(StepPhase::dense_optimizer);
      const double forward_hidden =
          std::min(at(StepPhase::bottom_mlp_fwd), at(StepPhase::embedding_fwd) + at(StepPhase::embedding_exchange));
      const double backward = dense == DensePrecision::fp16 ? b + x + std::max(d, u) : std::max(std::max(b, x) + d, x + u);
      EXPECT_NEAR(overlapped.rank_step_ms[r], serial.rank_step_ms[r] - forward_hidden - (b + x + u + d - backward),
                  1e-9 * serial.rank_step_ms[r])
          << "rank " << r;
      EXPECT_LT(overlapped.rank_step_ms[r], serial.rank_step_ms[r]) << "rank " << r;
    }
  }
  // One GPU has no embedding stream.
  EXPECT_FALSE(step_work(m, o, recipe_of_model(m, 65536, "h200_sxm"), t.gemm, ids).embedding_stream);
}

// Sum of a phase's collective terms as bytes (peer_link terms) and latency steps.
struct CommCounts {
  double bytes = 0.0, steps = 0.0;
};
CommCounts comm_counts(const StepWork& w, StepPhase phase, const std::string& what, double peer_bytes_per_us) {
  CommCounts c;
  for (const StepTerm& t : w.terms) {
    if (t.phase != phase || t.what.find(what) == std::string::npos) continue;
    if (t.factor == StepFactor::peer_link) c.bytes += t.base * peer_bytes_per_us;
    if (t.factor == StepFactor::collective_latency_us) c.steps += t.base;
  }
  return c;
}

TEST(MultiGpuStepModel, CommunicationBytesMatchAHandCount) {
  // Tables a (1000 rows, hotness 2) and b (300 rows, hotness 3), dim 8; 11 samples over
  // 2 GPUs: rank 0 trains 5, rank 1 trains 6.
  const ModelConfig m = small_model();
  OptimConfig o;  // SGD: column_wise is allowed
  o.sparse = OptimizerKind::sgd;
  const PlanTarget t = shipped_target("h200_sxm");
  const double peer = t.hw().peer_gbs_per_direction * 1e3;  // bytes per microsecond
  const auto work = [&](ShardingType a, int owner_a, ShardingType b, int owner_b, int gpus, int64_t batch) {
    Recipe r = recipe_of_model(m, batch, "h200_sxm");
    r.gpus = gpus;
    r.sharding = {{a, owner_a}, {b, owner_b}};
    return step_work(m, o, r, t.gemm, IdDistribution{IdLaw::uniform, 0.0});
  };
  const double d4 = 8 * 4;  // one pooled vector, fp32
  const auto fwd = StepPhase::embedding_exchange, bwd = StepPhase::embedding_grad_exchange;

  // table_wise, both on rank 0: it sends rank 1's 6 samples x 2 tables; rank 1 sends nothing.
  StepWork w = work(ShardingType::table_wise, 0, ShardingType::table_wise, 0, 2, 11);
  EXPECT_DOUBLE_EQ(comm_counts(w, fwd, "table/row-wise pooled", peer).bytes, 6 * 2 * d4);
  EXPECT_DOUBLE_EQ(comm_counts(w, fwd, "table/row-wise pooled", peer).steps, 1.0);
  EXPECT_DOUBLE_EQ(comm_counts(w, bwd, "table/row-wise pooled gradients", peer).bytes, 6 * 2 * d4);
  EXPECT_EQ(comm_counts(w, fwd, "column-wise", peer).steps, 0.0);  // no column exchange posted
  EXPECT_EQ(comm_counts(w, bwd, "replicated", peer).steps, 0.0);
  // One table on each rank: rank 0 sends 6 samples of a, rank 1 sends 5 of b: busiest 6.
  w = work(ShardingType::table_wise, 0, ShardingType::table_wise, 1, 2, 11);
  EXPECT_DOUBLE_EQ(comm_counts(w, fwd, "table/row-wise pooled", peer).bytes, 6 * d4);

  // row_wise: every rank holds a block of both tables: rank 0 sends 6 x 2, rank 1 5 x 2.
  w = work(ShardingType::row_wise, 0, ShardingType::row_wise, 0, 2, 11);
  EXPECT_DOUBLE_EQ(comm_counts(w, fwd, "table/row-wise pooled", peer).bytes, 6 * 2 * d4);
  EXPECT_DOUBLE_EQ(comm_counts(w, bwd, "table/row-wise pooled gradients", peer).bytes, 6 * 2 * d4);

  // column_wise: 4 of 8 columns per rank: rank 0 sends rank 1's 6 samples x 2 tables x 4 columns.
  w = work(ShardingType::column_wise, 0, ShardingType::column_wise, 0, 2, 11);
  EXPECT_DOUBLE_EQ(comm_counts(w, fwd, "column-wise pooled", peer).bytes, 6 * 2 * 4 * 4);
  EXPECT_DOUBLE_EQ(comm_counts(w, bwd, "column-wise pooled gradients", peer).bytes, 6 * 2 * 4 * 4);
  EXPECT_EQ(comm_counts(w, fwd, "table/row-wise", peer).steps, 0.0);

  // replicated: nothing forward; backward every rank sends its samples' gradients to the
  // other: rank 1 sends 6 x 2 vectors.
  w = work(ShardingType::replicated, 0, ShardingType::replicated, 0, 2, 11);
  EXPECT_EQ(comm_counts(w, fwd, "pooled", peer).bytes, 0.0);
  EXPECT_DOUBLE_EQ(comm_counts(w, bwd, "replicated", peer).bytes, 6 * 2 * d4);
  EXPECT_DOUBLE_EQ(comm_counts(w, bwd, "replicated", peer).steps, 1.0);

  // The dense all-reduce: the flat fp32 gradients, 2(N-1)/N of them on the link, 2(N-1)
  // steps; 4 GPUs, 16 samples, table_wise on ranks 1 and 3.
  w = work(ShardingType::table_wise, 1, ShardingType::table_wise, 3, 4, 16);
  const double flat = static_cast<double>(gpu_model_layout(m).dense_flat_elements) * 4;
  EXPECT_DOUBLE_EQ(comm_counts(w, StepPhase::dense_all_reduce, "dense gradients", peer).bytes, 1.5 * flat);
  EXPECT_DOUBLE_EQ(comm_counts(w, StepPhase::dense_all_reduce, "dense gradients", peer).steps, 6.0);
  // Ranks 1 and 3 each send 4 samples to each of 3 others: 12 x one table.
  EXPECT_DOUBLE_EQ(comm_counts(w, fwd, "table/row-wise pooled", peer).bytes, 12 * d4);
  EXPECT_DOUBLE_EQ(comm_counts(w, fwd, "table/row-wise pooled", peer).steps, 3.0);
  // The same counts from the communication model's own functions.
  const ExchangeBytes e = exchange_bytes(m, [&] {
    Recipe r = recipe_of_model(m, 16, "h200_sxm");
    r.gpus = 4;
    r.sharding = {{ShardingType::table_wise, 1}, {ShardingType::table_wise, 3}};
    return r;
  }());
  EXPECT_DOUBLE_EQ(all_to_all_v_cost(e.whole).link_bytes, 12 * d4);
  EXPECT_DOUBLE_EQ(e.whole[1][0], 4 * d4);
  EXPECT_EQ(e.whole[0][1], 0.0);

  // A bf16 exchange: the all-to-alls carry half the bytes and the replicated tables'
  // gather stays fp32; the lookup writes, and the update reads, bf16 pooled rows.
  const auto bf16_work = [&](ShardingType a, ShardingType b) {
    Recipe r = recipe_of_model(m, 11, "h200_sxm");
    r.gpus = 2;
    r.sharding = {{a, 0}, {b, 1}};
    r.exchange_dtype = DType::bf16;
    return step_work(m, o, r, t.gemm, IdDistribution{IdLaw::uniform, 0.0});
  };
  w = bf16_work(ShardingType::table_wise, ShardingType::table_wise);
  EXPECT_DOUBLE_EQ(comm_counts(w, fwd, "table/row-wise pooled", peer).bytes, 6 * d4 / 2);
  EXPECT_DOUBLE_EQ(comm_counts(w, bwd, "table/row-wise pooled gradients", peer).bytes, 6 * d4 / 2);
  w = bf16_work(ShardingType::column_wise, ShardingType::column_wise);
  EXPECT_DOUBLE_EQ(comm_counts(w, fwd, "column-wise pooled", peer).bytes, 6 * 2 * 4 * 2);
  w = bf16_work(ShardingType::replicated, ShardingType::replicated);
  EXPECT_DOUBLE_EQ(comm_counts(w, bwd, "replicated", peer).bytes, 6 * 2 * d4);
  // The pooled-gradient reads of the update and the lookup's output halve on routed
  // groups: the same terms, half the time.
  const StepWork narrow = bf16_work(ShardingType::table_wise, ShardingType::table_wise);
  const StepWork exact = work(ShardingType::table_wise, 0, ShardingType::table_wise, 1, 2, 11);
  ASSERT_EQ(narrow.terms.size(), exact.terms.size());
  int halved = 0;
  for (std::size_t k = 0; k < exact.terms.size(); ++k) {
    const StepTerm& a = narrow.terms[k];
    const StepTerm& b = exact.terms[k];
    if (b.what.find("pooled-gradient row") != std::string::npos || b.what.find("pooled output") != std::string::npos) {
      ++halved;
      EXPECT_GT(b.base, 0.0) << b.what;
      if (b.what.find("pooled output") != std::string::npos) EXPECT_DOUBLE_EQ(a.base, b.base / 2) << b.what;
      else EXPECT_LT(a.base, b.base) << b.what;  // the occurrences' indices stay 4 bytes
    }
  }
  EXPECT_EQ(halved, 4);  // two ranks, a lookup and an update each
}

TEST(MultiGpuStepModel, RowBlocksFollowTheIdLaw) {
  // Zipf ids are scrambled by the synthetic data: a block gets its share of rows. Power
  // ids are not: the first block gets the hot rows.
  const IdDistribution zipf{IdLaw::zipf, 1.05}, power{IdLaw::power, 3.0};
  EXPECT_DOUBLE_EQ(row_block_id_share(zipf, 1000, 0, 500), 0.5);
  EXPECT_NEAR(row_block_id_share(power, 1000, 0, 500), std::pow(0.5, 1.0 / 3.0), 1e-12);
  EXPECT_NEAR(row_block_id_share(power, 1000, 0, 500) + row_block_id_share(power, 1000, 500, 1000), 1.0, 1e-12);
  const double draws = 5000;
  EXPECT_NEAR(row_block_unique_rows(power, 100000, 0, 50000, draws) +
                  row_block_unique_rows(power, 100000, 50000, 100000, draws),
              expected_unique_rows(power, 100000, draws), 1e-6 * draws);
  EXPECT_NEAR(row_block_unique_rows(zipf, 100000, 0, 25000, draws), 0.25 * expected_unique_rows(zipf, 100000, draws),
              1e-9 * draws);
}

TEST(MultiGpuMemory, TableWiseMemoryPerRankDropsWithGpus) {
  const ModelConfig m = mlperf_model();
  const OptimConfig o = mlperf_optim();
  const Hardware hw = shipped_hardware("h200_sxm");
  double previous = 0.0;
  for (int gpus : {1, 2, 4, 8}) {
    Recipe r = recipe_of_model(m, 65536, hw.name);
    apply_sharding(r, m, dist::ShardingSpec{}, gpus);  // table_wise, round robin
    const std::vector<MemoryEstimate> ranks = estimate_rank_memory(m, o, r, hw);
    ASSERT_EQ(ranks.size(), static_cast<std::size_t>(gpus));
    double most = 0.0, rows = 0.0;
    for (const MemoryEstimate& e : ranks) {
      most = std::max(most, e.device_bytes());
      for (const MemoryConsumer& c : e.consumers)
        if (c.name.rfind("embedding rows", 0) == 0 && c.space == MemorySpace::device) rows += c.bytes;
    }
    EXPECT_EQ(estimate_memory(m, o, r, hw).device_bytes(), most);
    // Every row is on exactly one rank.
    int64_t all_rows = 0;
    for (const TableConfig& t : m.tables) all_rows += t.rows;
    EXPECT_DOUBLE_EQ(rows, static_cast<double>(all_rows) * m.embedding_dim * 4);
    if (gpus > 1) {
      EXPECT_LT(most, previous) << gpus << " GPUs";
    }
    previous = most;
  }
  // Replicated tables are on every rank; exchange buffers appear with several GPUs.
  Recipe r = recipe_of_model(m, 65536, hw.name);
  dist::ShardingSpec spec;
  spec.tables["t5"] = {ShardingType::replicated, -1};
  apply_sharding(r, m, spec, 2);
  for (const MemoryEstimate& e : estimate_rank_memory(m, o, r, hw)) {
    bool replicated = false, exchange = false;
    for (const MemoryConsumer& c : e.consumers) {
      replicated = replicated || c.name.find("replicated tables") != std::string::npos;
      exchange = exchange || c.name.rfind("exchange buffers", 0) == 0;
    }
    EXPECT_TRUE(replicated) << "rank " << e.rank;
    EXPECT_TRUE(exchange) << "rank " << e.rank;
  }
}

TEST(MultiGpuSearch, NeverUnsupportedAndNoWorseThanTableWise) {
  // Skewed: one huge hot table, one large warm one, small cold ones; mean pooling on the
  // hot one forbids row_wise, row-wise Adagrad forbids column_wise.
  ModelConfig m = mlperf_model(2000000);
  m.tables[20].rows = 20000000;
  m.tables[20].hotness = 200;
  OptimConfig o = mlperf_optim();
  for (bool mean_hot : {false, true}) {
    m.tables[20].pooling = mean_hot ? Pooling::mean : Pooling::sum;
    const Workload w{m, o, IdDistribution{IdLaw::zipf, 1.05}};
    const PlanTarget t = shipped_target("h200_sxm");
    PlanConstraints c;
    c.gpus = 2;
    c.min_batch = 16384;
    const PlanResult plan = plan_recipes(w, t, c);
    ASSERT_FALSE(plan.ranked.empty());
    for (const RecipeEvaluation& e : plan.ranked) {
      EXPECT_EQ(e.recipe.gpus, 2);
      EXPECT_EQ(gpu_sharding_unsupported(e.recipe, m, o), "");
      EXPECT_EQ(e.recipe.sharded_tables(ShardingType::column_wise), 0);  // row-wise Adagrad
      if (mean_hot) {
        EXPECT_NE(e.recipe.sharding[20].type, ShardingType::row_wise);
      }
      EXPECT_TRUE(e.fits);
      ASSERT_EQ(e.rank_memory.size(), 2u);
      for (const MemoryEstimate& r : e.rank_memory) EXPECT_TRUE(r.fits(t.hw(), c.headroom));
      // The same batch and precisions with the default table_wise placement.
      Recipe table_wise = e.recipe;
      apply_sharding(table_wise, m, dist::ShardingSpec{}, 2);
      const RecipeEvaluation base = evaluate_recipe(w, table_wise, t, c);
      EXPECT_LE(e.step.step_ms, base.step.step_ms * (1 + 1e-12)) << describe_recipe(e.recipe, m);
    }
    const RecipeEvaluation& best = plan.best();
    Recipe table_wise = best.recipe;
    apply_sharding(table_wise, m, dist::ShardingSpec{}, 2);
    const double base_ms = evaluate_recipe(w, table_wise, t, c).step.step_ms;
    // Sum pooling: splitting the hot table row_wise beats round robin. Mean pooling: it
    // must stay whole, and round robin may be the best placement (it balances the
    // exchange, which a rank holding everything but the hot table would not).
    if (mean_hot) {
      EXPECT_LE(best.step.step_ms, base_ms * (1 + 1e-12)) << describe_recipe(best.recipe, m);
    } else {
      EXPECT_EQ(best.recipe.sharding[20].type, ShardingType::row_wise) << describe_recipe(best.recipe, m);
      EXPECT_LT(best.step.step_ms, base_ms) << describe_recipe(best.recipe, m);
    }
  }
}

// Under a power law whose hot ids are the first rows, equal row blocks leave the first
// rank most of the work; the search also offers every row_wise table cut into blocks of
// equal predicted time, and prefers them here.
TEST(MultiGpuSearch, RowWiseTablesAlsoComeInBlocksOfEqualPredictedTime) {
  const ModelConfig m = mlperf_model(0);
  const Workload w{m, mlperf_optim(), IdDistribution{IdLaw::power, 3.0}};
  const PlanTarget t = shipped_target("h200_sxm");
  for (int gpus : {2, 4}) {
    SCOPED_TRACE(std::to_string(gpus) + " GPUs");
    Recipe base = recipe_of_model(m, 131072, "h200_sxm");
    base.dense = DensePrecision::bf16;
    base.row_dtype = DType::bf16;
    base.gpus = gpus;
    const auto candidates = candidate_shardings(w, base, t);
    int balanced = 0;
    for (const std::vector<TableSharding>& s : candidates) {
      for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i].row_bounds.empty()) continue;
        EXPECT_EQ(s[i].type, ShardingType::row_wise);
        ASSERT_EQ(s[i].row_bounds.size(), static_cast<std::size_t>(gpus + 1));
        EXPECT_EQ(s[i].row_bounds.front(), 0);
        EXPECT_EQ(s[i].row_bounds.back(), m.tables[i].rows);
        if (i != 20) continue;
        ++balanced;
        // The hot first rows make a short first block, and the blocks' times agree.
        EXPECT_LT(s[i].row_bounds[1], m.tables[i].rows / gpus / 2);
        std::vector<double> us;
        for (int r = 0; r < gpus; ++r)
          us.push_back(row_block_embedding_us(m, w.optim, base, t.hw(), w.ids, t.step, i, s[i].row_bounds[r],
                                              s[i].row_bounds[r + 1]));
        const auto [lo, hi] = std::minmax_element(us.begin(), us.end());
        EXPECT_LT(*hi / *lo, 1.02) << "block times " << *lo << " to " << *hi << " us";
      }
    }
    EXPECT_GT(balanced, 0) << "no candidate cuts table 20 into balanced blocks";
    // The balanced cut beats the even one for the same placement of the other tables.
    for (const std::vector<TableSharding>& s : candidates) {
      if (s[20].row_bounds.empty()) continue;
      std::vector<TableSharding> even = s;
      for (TableSharding& e : even) e.row_bounds.clear();
      if (std::find(candidates.begin(), candidates.end(), even) == candidates.end()) continue;
      Recipe a = base, b = base;
      a.sharding = s;
      b.sharding = even;
      EXPECT_LT(predict_step(sharded_step_work(m, w.optim, a, t.hw(), w.ids), t.step).step_ms,
                predict_step(sharded_step_work(m, w.optim, b, t.hw(), w.ids), t.step).step_ms);
    }
  }
}

TEST(MultiGpuSearch, SixteenBitRecipesExchangeInBf16) {
  const ModelConfig m = mlperf_model(2000000);
  const Workload w{m, mlperf_optim(), IdDistribution{IdLaw::zipf, 1.05}};
  const PlanTarget t = shipped_target("h200_sxm");
  PlanConstraints c;
  c.gpus = 2;
  c.min_batch = 16384;
  c.max_batch = 16384;
  const PlanResult plan = plan_recipes(w, t, c);
  ASSERT_FALSE(plan.ranked.empty());
  std::set<DensePrecision> seen;
  for (const RecipeEvaluation& e : plan.ranked) {
    seen.insert(e.recipe.dense);
    EXPECT_EQ(e.recipe.exchange_dtype, sixteen_bit_dense(e.recipe.dense) ? DType::bf16 : DType::f32)
        << describe_recipe(e.recipe, m);
    // The same recipe exchanging fp32 predicts a longer exchange.
    if (e.recipe.exchange_dtype == DType::bf16) {
      Recipe f32 = e.recipe;
      f32.exchange_dtype = DType::f32;
      const RecipeEvaluation wide = evaluate_recipe(w, f32, t, c);
      EXPECT_LT(e.step.phase(StepPhase::embedding_exchange), wide.step.phase(StepPhase::embedding_exchange));
      EXPECT_LT(e.step.step_ms, wide.step.step_ms);
    }
  }
  EXPECT_TRUE(seen.count(DensePrecision::bf16)) << "no bf16 recipe was ranked";
}

}  // namespace
}  // namespace hetrec::test
