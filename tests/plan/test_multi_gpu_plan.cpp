// The planner for N GPUs of one host: recipes with a sharding through TOML and the
// config parser, the distributed e2e records, and `hetrec plan --gpus 2` end to end
// (the step model, memory and sharding search for N GPUs: test_multi_gpu_step_model.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "../cli/cli_test_support.h"
#include "core/error.h"
#include "plan/e2e_record.h"
#include "plan/recipe_toml.h"
#include "plan/search.h"
#include "plan/step_model.h"
#include "plan_test_support.h"
#include "train/config.h"

namespace hetrec::test {
namespace {

using dist::ShardingType;

const std::string kMlperfConfig = std::string(HETREC_SOURCE_DIR) + "/configs/dlrm_dcnv2_mlperf.toml";

std::filesystem::path write_text(const std::string& name, const std::string& text) {
  const auto dir = scratch_dir("multi_gpu_plan");
  const auto path = dir / name;
  std::ofstream(path) << text;
  return path;
}

// A mixed sharding of the MLPerf model on 4 GPUs: every type, owners spread.
Recipe mixed_recipe(const ModelConfig& m) {
  Recipe r = recipe_of_model(m, 65536, "h200_sxm");
  r.dense = DensePrecision::tf32;
  r.row_dtype = DType::bf16;
  r.gpus = 4;
  r.sharding.assign(m.tables.size(), TableSharding{});
  for (std::size_t t = 0; t < m.tables.size(); ++t) r.sharding[t] = {ShardingType::table_wise, static_cast<int>((3 * t) % 4)};
  // Table 20's hot rows in a short first block; table 0 in blocks of equal rows.
  const int64_t rows20 = m.tables[20].rows;
  r.sharding[20] = {ShardingType::row_wise, 0, {0, rows20 / 1000, rows20 / 10, rows20 / 2, rows20}};
  r.sharding[0] = {ShardingType::row_wise, 0};
  r.sharding[5] = {ShardingType::replicated, 0};
  r.sharding[12] = {ShardingType::replicated, 0};
  r.sharding[7] = {ShardingType::column_wise, 0};
  return r;
}

TEST(MultiGpuRecipe, ShardingSurvivesTomlAndTheConfigParser) {
  const RunConfig base = load_run_config(kMlperfConfig);
  const Recipe r = mixed_recipe(base.model);
  StepPrediction p;
  p.step_ms = 12.5;
  p.samples_per_s = 5.2e6;
  const std::string text = recipe_to_toml(r, p, base.model);
  EXPECT_NE(text.find("gpus = 4"), std::string::npos);
  EXPECT_NE(text.find("[recipe.sharding.tables.t20]\ntype = \"row_wise\"\nrow_bounds = [0, "), std::string::npos);
  EXPECT_NE(text.find("[recipe.sharding.tables.t0]\ntype = \"row_wise\"\n\n"), std::string::npos);
  const auto path = write_text("recipe.toml", text);

  // What `mpirun -np 4 hetrec train --recipe` reads.
  const RunConfig cfg = load_run_config(kMlperfConfig, {}, path.string());
  EXPECT_EQ(cfg.recipe_gpus, 4);
  EXPECT_EQ(cfg.train.batch_size, 65536);
  EXPECT_EQ(cfg.model.row_dtype, DType::bf16);
  EXPECT_TRUE(cfg.model.allow_tf32);
  const dist::ShardingSpec want = sharding_spec(r, base.model);
  ASSERT_EQ(cfg.sharding.tables.size(), want.tables.size());
  EXPECT_EQ(cfg.sharding.default_type, ShardingType::table_wise);
  for (const auto& [name, choice] : want.tables) {
    ASSERT_TRUE(cfg.sharding.tables.count(name)) << name;
    EXPECT_EQ(cfg.sharding.tables.at(name).type, choice.type) << name;
    EXPECT_EQ(cfg.sharding.tables.at(name).owner, choice.owner) << name;
  }
  // Resolved for the job's 4 ranks it is the recipe's plan, and reading it back into a
  // recipe gives the recipe.
  const dist::ShardingPlan from_config =
      dist::plan_sharding(cfg.sharding, cfg.model.tables, cfg.model.embedding_dim, 4);
  const dist::ShardingPlan from_recipe = sharding_plan(r, base.model);
  for (std::size_t t = 0; t < from_recipe.tables.size(); ++t) {
    EXPECT_EQ(from_config.tables[t].type, from_recipe.tables[t].type);
    EXPECT_EQ(from_config.tables[t].owner, from_recipe.tables[t].owner);
    EXPECT_EQ(from_config.tables[t].row_begin, from_recipe.tables[t].row_begin);
    EXPECT_EQ(from_config.tables[t].row_end, from_recipe.tables[t].row_end);
    EXPECT_EQ(from_config.tables[t].col_begin, from_recipe.tables[t].col_begin);
  }
  Recipe back = recipe_of_model(cfg.model, cfg.train.batch_size, "h200_sxm");
  apply_sharding(back, cfg.model, cfg.sharding, cfg.recipe_gpus);
  EXPECT_EQ(back.sharding, r.sharding);

  EXPECT_EQ(from_config.tables[20].row_end[0], base.model.tables[20].rows / 1000);

  // Row bounds on a table that is not row_wise, or of the wrong count, name their key.
  for (const std::string& bad : {std::string("type = \"table_wise\"\nrank = 0\nrow_bounds = [0, 5, 10]"),
                                 std::string("type = \"row_wise\"\nrow_bounds = [0, 5]"),
                                 std::string("type = \"row_wise\"\nrow_bounds = [0, \"5\"]")}) {
    std::string wrong = text;
    const auto at = wrong.find("[recipe.sharding.tables.t1]\n");
    ASSERT_NE(at, std::string::npos);
    const auto end = wrong.find("\n\n", at);
    wrong.replace(at, end - at, "[recipe.sharding.tables.t1]\n" + bad);
    try {
      const RunConfig c = load_run_config(kMlperfConfig, {}, write_text("bad-bounds.toml", wrong).string());
      dist::plan_sharding(c.sharding, c.model.tables, c.model.embedding_dim, 4);
      ADD_FAILURE() << "no error for " << bad;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("recipe.sharding.tables.t1.row_bounds"), std::string::npos) << e.what();
    }
  }

  // One GPU writes what it always wrote: no gpus, no sharding.
  Recipe one = r;
  one.gpus = 1;
  one.sharding.clear();
  const std::string single = recipe_to_toml(one, p, base.model);
  EXPECT_EQ(single.find("gpus"), std::string::npos);
  EXPECT_EQ(single.find("sharding"), std::string::npos);
  EXPECT_EQ(load_run_config(kMlperfConfig, {}, write_text("one.toml", single).string()).recipe_gpus, 0);
}

TEST(MultiGpuRecipe, ExchangeTypeSurvivesTomlAndBadValuesNameTheKey) {
  const RunConfig base = load_run_config(kMlperfConfig);
  Recipe r = mixed_recipe(base.model);
  StepPrediction p;
  EXPECT_NE(recipe_to_toml(r, p, base.model).find("exchange_dtype = \"fp32\""), std::string::npos);
  r.exchange_dtype = DType::bf16;
  const std::string text = recipe_to_toml(r, p, base.model);
  EXPECT_NE(text.find("[recipe.sharding]\ndefault = \"table_wise\"\nexchange_dtype = \"bf16\""), std::string::npos);
  const RunConfig cfg = load_run_config(kMlperfConfig, {}, write_text("bf16.toml", text).string());
  EXPECT_EQ(cfg.sharding.exchange_dtype, DType::bf16);
  EXPECT_EQ(dist::plan_sharding(cfg.sharding, cfg.model.tables, cfg.model.embedding_dim, 4).exchange_dtype, DType::bf16);
  EXPECT_EQ(sharding_plan(r, base.model).exchange_dtype, DType::bf16);
  Recipe back = recipe_of_model(cfg.model, cfg.train.batch_size, "h200_sxm");
  apply_sharding(back, cfg.model, cfg.sharding, cfg.recipe_gpus);
  EXPECT_EQ(back.exchange_dtype, DType::bf16);
  for (const char* bad : {"\"fp16\"", "\"int8\"", "16"}) {
    const std::string wrong = "[recipe]\ngpus = 2\n[recipe.sharding]\nexchange_dtype = " + std::string(bad) + "\n";
    try {
      load_run_config(kMlperfConfig, {}, write_text("bad_exchange.toml", wrong).string());
      ADD_FAILURE() << "accepted exchange_dtype = " << bad;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("recipe.sharding.exchange_dtype"), std::string::npos) << e.what();
    }
  }
}

TEST(MultiGpuRecipe, ValidationNamesWhatIsWrong) {
  const ModelConfig m = small_model();
  Recipe r = recipe_of_model(m, 64, "h200_sxm");
  r.gpus = 2;
  EXPECT_THROW(validate_recipe(r, m), ConfigError);  // no sharding
  r.sharding = {{ShardingType::table_wise, 2}, {ShardingType::table_wise, 0}};
  EXPECT_THROW(validate_recipe(r, m), ConfigError);  // owner outside the GPUs
  r.sharding[0].owner = 1;
  EXPECT_NO_THROW(validate_recipe(r, m));
  r.batch = 1;
  EXPECT_THROW(validate_recipe(r, m), ConfigError);  // fewer samples than GPUs
  // The GPU engine's unsupported combinations.
  ModelConfig mean = small_model();
  mean.tables[0].pooling = Pooling::mean;
  Recipe rw = recipe_of_model(mean, 64, "h200_sxm");
  rw.gpus = 2;
  rw.sharding = {{ShardingType::row_wise, 0}, {ShardingType::table_wise, 0}};
  OptimConfig sgd;
  sgd.sparse = OptimizerKind::sgd;
  EXPECT_NE(gpu_sharding_unsupported(rw, mean, sgd).find("mean"), std::string::npos);
  Recipe cw = recipe_of_model(m, 64, "h200_sxm");
  cw.gpus = 2;
  cw.sharding = {{ShardingType::column_wise, 0}, {ShardingType::table_wise, 0}};
  EXPECT_EQ(gpu_sharding_unsupported(cw, m, sgd), "");
  EXPECT_NE(gpu_sharding_unsupported(cw, m, mlperf_optim()).find("row-wise Adagrad"), std::string::npos);
  const PlanTarget t = shipped_target("h200_sxm");
  EXPECT_THROW(step_work(m, mlperf_optim(), cw, t.gemm, IdDistribution{}), ConfigError);
}

TEST(MultiGpuPlan, DistributedE2eRecordsParseWithTheirSharding) {
  // What `mpirun -np 2 e2e_bench --profile` writes (bench/e2e_bench.cpp).
  const std::string record = R"({"benchmark": "e2e", "date": "2026-11-30", "gpu": "NVIDIA H200",
    "metrics": {"config": "configs/dlrm_dcnv2_capped.toml", "batch": 65536, "precision": "tf32", "row_dtype": "",
      "step_ms": 30.0, "cuda_graph": false, "world_size": 2,
      "sharding": "t0:table_wise@1, t1:row_wise, t2:replicated, t3:column_wise",
      "phase_ms": {"embedding_fwd": 1.0, "embedding_exchange": 0.8, "dense_all_reduce": 0.2,
                   "embedding_grad_exchange": 0.9}}})";
  const auto path = write_text("e2e-distributed.json", record);
  const E2eRecord r = read_e2e_record(path.string());
  EXPECT_EQ(r.world_size, 2);
  ModelConfig m = mlperf_model(2000000);
  m.tables.resize(4);
  OptimConfig o;
  o.sparse = OptimizerKind::sgd;
  const PlanTarget t = shipped_target("h200_sxm");
  const StepMeasurement meas = e2e_measurement(r, m, o, t.gemm);
  EXPECT_EQ(meas.work.gpus, 2);
  EXPECT_EQ(meas.phase_ms.at(StepPhase::embedding_exchange), 0.8);
  EXPECT_EQ(meas.phase_ms.at(StepPhase::dense_all_reduce), 0.2);
  const StepPrediction p = predict_step(meas.work, t.step);
  EXPECT_GT(p.phase(StepPhase::embedding_exchange), 0.0);
  EXPECT_GT(p.phase(StepPhase::dense_all_reduce), 0.0);
  // A bad entry names the key.
  std::string bad = record;
  bad.replace(bad.find("t1:row_wise"), 11, "t1-row_wise");
  try {
    e2e_measurement(read_e2e_record(write_text("bad.json", bad).string()), m, o, t.gemm);
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("metrics.sharding"), std::string::npos) << e.what();
  }
  // A record of a bf16 exchange is predicted with one (a record without the field exchanged fp32).
  std::string narrow = record;
  narrow.insert(narrow.find("\"phase_ms\""), "\"exchange_dtype\": \"bf16\", ");
  const E2eRecord rn = read_e2e_record(write_text("e2e-bf16.json", narrow).string());
  EXPECT_EQ(rn.exchange_dtype, "bf16");
  const StepPrediction pn = predict_step(e2e_measurement(rn, m, o, t.gemm).work, t.step);
  EXPECT_LT(pn.phase(StepPhase::embedding_exchange), p.phase(StepPhase::embedding_exchange));
  // A record of an overlapped step is predicted with the embedding stream, one without
  // the field (or profiled) with one stream.
  EXPECT_FALSE(meas.work.embedding_stream);
  std::string overlapped = record;
  overlapped.insert(overlapped.find("\"phase_ms\""), "\"overlap_exchanges\": true, ");
  const StepMeasurement mo = e2e_measurement(read_e2e_record(write_text("e2e-overlap.json", overlapped).string()), m, o, t.gemm);
  EXPECT_TRUE(mo.work.embedding_stream);
  EXPECT_LT(predict_step(mo.work, t.step).step_ms, p.step_ms);
  std::string not_bool = record;
  not_bool.insert(not_bool.find("\"phase_ms\""), "\"overlap_exchanges\": 1, ");
  try {
    read_e2e_record(write_text("e2e-overlap-bad.json", not_bool).string());
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("metrics.overlap_exchanges"), std::string::npos) << e.what();
  }
  // Row blocks a recipe chose travel in the sharding text, "[0 ... rows]".
  std::string blocks = record;
  blocks.replace(blocks.find("t1:row_wise"), 11, "t1:row_wise[0 5 " + std::to_string(m.tables[1].rows) + "]");
  const StepMeasurement mb = e2e_measurement(read_e2e_record(write_text("e2e-blocks.json", blocks).string()), m, o, t.gemm);
  EXPECT_NE(predict_step(mb.work, t.step).rank_step_ms, p.rank_step_ms);
  std::string bad_blocks = record;
  bad_blocks.replace(bad_blocks.find("t1:row_wise"), 11, "t1:row_wise[0 x]");
  EXPECT_THROW(e2e_measurement(read_e2e_record(write_text("e2e-bad-blocks.json", bad_blocks).string()), m, o, t.gemm),
               ConfigError);
  std::string wrong = record;
  wrong.insert(wrong.find("\"phase_ms\""), "\"exchange_dtype\": \"fp16\", ");
  EXPECT_THROW(e2e_measurement(read_e2e_record(write_text("e2e-fp16.json", wrong).string()), m, o, t.gemm),
               ConfigError);
}

TEST(MultiGpuPlan, HetrecPlanForTwoGpusWritesARecipeTrainAccepts) {
  const auto dir = scratch_dir("plan_gpus2");
  const auto recipe = dir / "plan.toml";
  const auto json = dir / "evaluation.json";
  const RunResult r = run_hetrec("plan --config configs/dlrm_dcnv2_mlperf.toml --hw h200_sxm --gpus 2 --out " +
                                     recipe.string(),
                                 dir);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("embedding_exchange"), std::string::npos);
  EXPECT_NE(r.out.find("dense_all_reduce"), std::string::npos);
  EXPECT_NE(r.out.find("rank 1 (GiB, ms)"), std::string::npos);
  const RunConfig cfg = load_run_config(kMlperfConfig, {}, recipe.string());
  EXPECT_EQ(cfg.recipe_gpus, 2);
  EXPECT_EQ(cfg.sharding.tables.size(), cfg.model.tables.size());
  const dist::ShardingPlan plan = dist::plan_sharding(cfg.sharding, cfg.model.tables, cfg.model.embedding_dim, 2);
  EXPECT_EQ(plan.tables.size(), cfg.model.tables.size());

  // --evaluate predicts the written recipe with its own gpus and sharding.
  const RunResult e = run_hetrec("plan --config configs/dlrm_dcnv2_mlperf.toml --hw h200_sxm --evaluate " +
                                     recipe.string() + " --json " + json.string(),
                                 dir);
  ASSERT_EQ(e.code, 0) << e.out << e.err;
  const std::string text = slurp(json);
  EXPECT_NE(text.find("\"gpus\": 2"), std::string::npos);
  EXPECT_NE(text.find("\"dense_all_reduce\""), std::string::npos);
  EXPECT_NE(text.find("\"ranks\""), std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace hetrec::test
