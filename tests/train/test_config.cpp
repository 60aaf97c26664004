#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "core/error.h"
#include "train/config.h"

using namespace hetrec;

namespace {

const char* kBase = R"(
[model]
arch = "dlrm"
embedding_dim = 8
table_rows = [100, 200]
table_hotness = [1, 3]
bottom_mlp = [16, 8]
top_mlp = [16, 1]

[train]
batch_size = 64
steps = 10
)";

// Expects a ConfigError whose message contains every fragment.
void expect_config_error(const std::string& text, const std::vector<std::string>& overrides,
                         const std::vector<std::string>& fragments) {
  try {
    parse_run_config(text, "test.toml", overrides);
    FAIL() << "no error for overrides " << (overrides.empty() ? "" : overrides[0]);
  } catch (const ConfigError& e) {
    for (const auto& f : fragments) EXPECT_NE(std::string(e.what()).find(f), std::string::npos) << e.what();
  }
}

}  // namespace

TEST(Config, ParsesAndAppliesDefaults) {
  RunConfig c = parse_run_config(kBase, "test.toml");
  EXPECT_EQ(c.model.arch, Arch::dlrm);
  ASSERT_EQ(c.model.tables.size(), 2u);
  EXPECT_EQ(c.model.tables[1].rows, 200);
  EXPECT_EQ(c.model.tables[1].hotness, 3);
  EXPECT_EQ(c.train.batch_size, 64);
  EXPECT_EQ(c.optim.sparse, OptimizerKind::rowwise_adagrad);
  EXPECT_DOUBLE_EQ(c.optim.sparse_lr, c.optim.lr);
  EXPECT_EQ(c.data.format, DataFormat::synthetic);
}

TEST(Config, OverridesAndRecipe) {
  RunConfig c = parse_run_config(kBase, "test.toml",
                                 {"train.steps=99", "optim.lr=0.5", "model.row_dtype=bf16", "data.synthetic.seed=11",
                                  "train.metrics_path=out/m.jsonl"},
                                 "[recipe]\nbatch_size = 4096\nrow_dtype = \"fp16\"\nhardware = \"h200_sxm\"\n");
  EXPECT_EQ(c.train.steps, 99);
  EXPECT_DOUBLE_EQ(c.optim.lr, 0.5);
  EXPECT_EQ(c.model.row_dtype, DType::f16);  // the recipe is applied last
  EXPECT_EQ(c.train.batch_size, 4096);
  EXPECT_EQ(c.data.synthetic.seed, 11u);
  EXPECT_EQ(c.train.metrics_path, "out/m.jsonl");
}

// The planner's host placement: recipe key host_tables (and model.host_tables), names
// of the model's tables; the timing-run keys of [train].
TEST(Config, HostTablesAndTimingKeys) {
  RunConfig c = parse_run_config(kBase, "test.toml", {"train.eval_at_end=false", "train.timing_warmup_steps=3"},
                                 "[recipe]\nbatch_size = 128\nhost_tables = [\"t1\"]\n");
  ASSERT_EQ(c.model.host_tables.size(), 1u);
  EXPECT_EQ(c.model.host_tables[0], "t1");
  EXPECT_FALSE(c.train.eval_at_end);
  EXPECT_EQ(c.train.timing_warmup_steps, 3);
  EXPECT_TRUE(parse_run_config(kBase, "test.toml").train.eval_at_end);
  c = parse_run_config(kBase, "test.toml", {"model.host_tables=[\"t0\", \"t1\"]"});
  EXPECT_EQ(c.model.host_tables.size(), 2u);
  try {
    parse_run_config(kBase, "test.toml", {}, "[recipe]\nhost_tables = [\"t0\", \"t7\"]\n", "plan.toml");
    FAIL() << "unknown table accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("plan.toml:2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'recipe.host_tables': 't7' is not a table"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("tables: t0, t1"), std::string::npos) << e.what();
  }
  expect_config_error(kBase, {"model.host_tables=[\"t0\", \"t0\"]"}, {"'model.host_tables'", "named twice"});
  expect_config_error(kBase, {"model.host_tables=[1]"}, {"'model.host_tables'", "array of strings"});
}

// model.sort: the embedding backward's sort (kernels/sort_pairs.h).
TEST(Config, SortKey) {
  EXPECT_EQ(parse_run_config(kBase, "test.toml").model.sort, SortSelection::automatic);
  EXPECT_EQ(parse_run_config(kBase, "test.toml", {"model.sort=engine"}).model.sort, SortSelection::engine);
  EXPECT_EQ(parse_run_config(kBase, "test.toml", {"model.sort=library"}).model.sort, SortSelection::library);
  EXPECT_EQ(parse_run_config(kBase, "test.toml", {"model.sort=auto"}).model.sort, SortSelection::automatic);
  expect_config_error(kBase, {"model.sort=cub"}, {"'model.sort'", "expected one of auto, engine, library"});
}

TEST(Config, CrossResidualKey) {
  EXPECT_FALSE(parse_run_config(kBase, "test.toml").model.cross_residual_16bit);
  EXPECT_TRUE(parse_run_config(kBase, "test.toml", {"model.cross_residual=\"16bit\""}).model.cross_residual_16bit);
  EXPECT_FALSE(parse_run_config(kBase, "test.toml", {"model.cross_residual=\"fp32\""}).model.cross_residual_16bit);
  EXPECT_TRUE(
      parse_run_config(kBase, "test.toml", {}, "[recipe]\ncross_residual = \"16bit\"\n", "plan.toml").model.cross_residual_16bit);
  expect_config_error(kBase, {"model.cross_residual=\"bf16\""}, {"'model.cross_residual'", "expected one of fp32, 16bit"});
}

TEST(Config, UnalignedGemmsKey) {
  EXPECT_TRUE(parse_run_config(kBase, "test.toml").model.unaligned_tf32);
  EXPECT_FALSE(parse_run_config(kBase, "test.toml", {"model.unaligned_gemms=\"fp32\""}).model.unaligned_tf32);
  EXPECT_TRUE(parse_run_config(kBase, "test.toml", {"model.unaligned_gemms=\"tf32\""}).model.unaligned_tf32);
  expect_config_error(kBase, {"model.unaligned_gemms=\"bf16\""}, {"'model.unaligned_gemms'", "expected one of tf32, fp32"});
}

TEST(Config, ReluBackwardKey) {
  EXPECT_EQ(parse_run_config(kBase, "test.toml").model.relu_backward, ReluBackward::mask_pass);
  EXPECT_EQ(parse_run_config(kBase, "test.toml", {"model.relu_backward=\"epilogue\""}).model.relu_backward,
            ReluBackward::epilogue);
  EXPECT_EQ(parse_run_config(kBase, "test.toml", {"model.relu_backward=\"split\""}).model.relu_backward,
            ReluBackward::split);
  EXPECT_EQ(parse_run_config(kBase, "test.toml", {"model.relu_backward=\"pass\""}).model.relu_backward,
            ReluBackward::pass);
  EXPECT_EQ(parse_run_config(kBase, "test.toml", {"model.relu_backward=\"mask_pass\""}).model.relu_backward,
            ReluBackward::mask_pass);
  expect_config_error(kBase, {"model.relu_backward=\"fused\""},
                      {"'model.relu_backward'", "expected one of epilogue, split, pass, mask_pass"});
}

TEST(Config, GemmTimedShortlistKey) {
  EXPECT_EQ(parse_run_config(kBase, "test.toml").model.gemm_timed_shortlist, 0);
  EXPECT_EQ(parse_run_config(kBase, "test.toml", {"model.gemm_timed_shortlist=5"}).model.gemm_timed_shortlist, 5);
  expect_config_error(kBase, {"model.gemm_timed_shortlist=-1"},
                      {"'model.gemm_timed_shortlist'", "expected an integer in [0, 64]"});
  expect_config_error(kBase, {"model.gemm_timed_shortlist=\"five\""},
                      {"'model.gemm_timed_shortlist'", "expected an integer"});
}

TEST(Config, LossScaleKeys) {
  RunConfig c = parse_run_config(kBase, "test.toml", {"model.dense_dtype=fp16", "optim.loss_scale=1024",
                                                      "optim.loss_scale_growth_interval=50"});
  EXPECT_EQ(c.model.dense_dtype, DType::f16);
  EXPECT_DOUBLE_EQ(c.optim.loss_scale, 1024.0);
  EXPECT_EQ(c.optim.loss_scale_growth_interval, 50);
  EXPECT_DOUBLE_EQ(parse_run_config(kBase, "test.toml").optim.loss_scale, 65536.0);
  expect_config_error(kBase, {"optim.loss_scale=1000"}, {"'optim.loss_scale'", "power of two"});
  expect_config_error(kBase, {"optim.loss_scale=1e9"}, {"'optim.loss_scale'"});
  expect_config_error(kBase, {"optim.loss_scale_growth_interval=0"}, {"'optim.loss_scale_growth_interval'"});
}

TEST(Config, ErrorsNameTheKey) {
  expect_config_error(kBase, {"train.stepz=3"}, {"unknown config key 'train.stepz'", "valid keys"});
  expect_config_error(kBase, {"train.steps=\"ten\""}, {"'train.steps'", "expected an integer, got a string"});
  expect_config_error(kBase, {"train.batch_size=0"}, {"'train.batch_size'", "expected an integer in [1,"});
  expect_config_error(kBase, {"model.arch=\"dlrm2\""}, {"'model.arch'", "expected one of dlrm, dcnv2"});
  expect_config_error(kBase, {"model.bottom_mlp=[16, 9]"}, {"'model.bottom_mlp'", "embedding_dim = 8"});
  expect_config_error(kBase, {"model.top_mlp=[16, 2]"}, {"'model.top_mlp'", "must be 1"});
  expect_config_error(kBase, {"model.table_hotness=[1]"}, {"'model.table_hotness'", "expected 2 entries"});
  expect_config_error(kBase, {"model.table_rows=[100, -1]"}, {"'model.table_rows'", "element 1"});
  expect_config_error(kBase, {"optim.dense=\"rowwise_adagrad\""}, {"'optim.dense'", "sgd, adagrad, adam"});
  expect_config_error(kBase, {"optim.decay_start=10"}, {"'optim.decay_steps'"});
  expect_config_error(kBase, {"data.format=\"criteo_tsv\""}, {"'data.train_path'", "required"});
  expect_config_error(kBase, {"data.missing_categorical_id=150"}, {"data.missing_categorical_id", "rows 100"});
  expect_config_error(kBase, {"train.resume=true"}, {"'train.resume'", "checkpoint_dir"});
  expect_config_error(kBase, {"train.steps"}, {"--set 'train.steps'", "key=value"});
  expect_config_error(std::string(kBase) + "\n[bogus]\nx = 1\n", {}, {"unknown config key 'bogus'"});
  expect_config_error("[model\narch=1", {}, {"test.toml:1", "invalid TOML"});
  try {
    parse_run_config(kBase, "test.toml", {}, "[recipe]\nbatch = 3\n", "plan.toml");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("plan.toml"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'recipe.batch'"), std::string::npos) << e.what();
  }
}

TEST(Config, LineNumbersInMessages) {
  const std::string text = std::string(kBase) + "\n[optim]\nlr = \"fast\"\n";
  try {
    parse_run_config(text, "cfg.toml");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("cfg.toml:15"), std::string::npos) << e.what();
  }
}

// A config or recipe file that cannot be opened is a mistake in the command line: a
// ConfigError (exit code 2) naming the file, not an I/O error.
TEST(Config, MissingFileIsAConfigError) {
  EXPECT_THROW(load_run_config("/nonexistent/hetrec.toml"), ConfigError);
  try {
    load_run_config("/nonexistent/hetrec.toml");
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("config file '/nonexistent/hetrec.toml'"), std::string::npos) << e.what();
  }
  const std::string config = std::string(HETREC_SOURCE_DIR) + "/configs/demo.toml";
  try {
    load_run_config(config, {}, "/nonexistent/recipe.toml");
    FAIL() << "a missing recipe file is accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("recipe file '/nonexistent/recipe.toml'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(load_run_config(HETREC_SOURCE_DIR), ConfigError);  // a directory
}

// A bad value given with --set is reported against the option, not against the file (or a
// line of it) that the value replaced or was added to.
TEST(Config, OverrideErrorsNameTheOption) {
  const std::string text = std::string(kBase) + "\n[optim]\nlr = 0.1\n";
  expect_config_error(text, {"optim.lr=fast"}, {"--set optim.lr=fast: config key 'optim.lr': expected a number, got a string"});
  expect_config_error(kBase, {"train.steps=-1"}, {"--set train.steps=-1: config key 'train.steps'"});
  expect_config_error(kBase, {"train.stepz=3"}, {"--set train.stepz=3: unknown config key 'train.stepz'"});
  expect_config_error(kBase, {"modle.lr=1"}, {"--set modle.lr=1: unknown config key 'modle'"});
  expect_config_error(kBase, {"model.table_rows=[100, -1]"}, {"--set model.table_rows=[100, -1]: config key 'model.table_rows'"});
  for (const char* overrides : {"optim.lr=fast", "train.steps=-1"}) {
    try {
      parse_run_config(text, "cfg.toml", {overrides});
    } catch (const ConfigError& e) {
      EXPECT_EQ(std::string(e.what()).find("cfg.toml"), std::string::npos) << e.what();
    }
  }
  expect_config_error(kBase, {"data.missing_categorical_id=150"},
                      {"--set data.missing_categorical_id=150: config key 'data.missing_categorical_id' = 150"});
  // A value from the file is still reported with its file and line.
  expect_config_error(std::string(kBase) + "\n[optim]\nlr = \"fast\"\n", {"train.steps=3"}, {"test.toml:15: config key 'optim.lr'"});
}

TEST(Config, BundledConfigsParse) {
  for (const char* name : {"demo.toml", "dlrm_dcnv2_mlperf.toml", "dlrm_dcnv2_capped.toml"}) {
    RunConfig c = load_run_config(std::string(HETREC_SOURCE_DIR) + "/configs/" + name);
    EXPECT_FALSE(c.model.tables.empty()) << name;
  }
  RunConfig m = load_run_config(std::string(HETREC_SOURCE_DIR) + "/configs/dlrm_dcnv2_mlperf.toml");
  int64_t rows = 0, lookups = 0;
  for (const auto& t : m.model.tables) {
    rows += t.rows;
    lookups += t.hotness;
  }
  EXPECT_EQ(rows, 204184588);  // 204.2 M rows
  EXPECT_EQ(lookups, 214);     // lookups per sample
  EXPECT_EQ(m.model.interaction_width(), 27 * 128);
}

TEST(Config, RecipeShardingSection) {
  const RunConfig plain = parse_run_config(kBase, "test.toml");
  EXPECT_EQ(plain.sharding.default_type, dist::ShardingType::table_wise);
  EXPECT_TRUE(plain.sharding.tables.empty());
  const RunConfig c = parse_run_config(kBase, "test.toml", {}, R"([recipe.sharding]
default = "row_wise"
[recipe.sharding.tables.t1]
type = "table_wise"
rank = 3
)",
                                       "plan.toml");
  EXPECT_EQ(c.sharding.default_type, dist::ShardingType::row_wise);
  ASSERT_EQ(c.sharding.tables.size(), 1u);
  EXPECT_EQ(c.sharding.tables.at("t1").type, dist::ShardingType::table_wise);
  EXPECT_EQ(c.sharding.tables.at("t1").owner, 3);
  EXPECT_EQ(c.sharding.source, "recipe.sharding");
  // In the config's own [recipe], with --set.
  const RunConfig s = parse_run_config(kBase, "test.toml", {"recipe.sharding.tables.t0.type=column_wise"});
  EXPECT_EQ(s.sharding.tables.at("t0").type, dist::ShardingType::column_wise);
  expect_config_error(kBase, {"recipe.sharding.default=diagonal"}, {"'recipe.sharding.default'", "column_wise"});
  expect_config_error(kBase, {"recipe.sharding.tables.t7.type=row_wise"}, {"'recipe.sharding.tables.t7'", "no table 't7'"});
  expect_config_error(kBase, {"recipe.sharding.tables.t0.rank=1", "recipe.sharding.tables.t0.type=replicated"},
                      {"'recipe.sharding.tables.t0.rank'", "only a table_wise table"});
  expect_config_error(kBase, {"recipe.sharding.tables.t0.owner=1"}, {"unknown config key 'recipe.sharding.tables.t0.owner'"});
  expect_config_error(kBase, {"train.collective_timeout_s=-1"}, {"'train.collective_timeout_s'"});
}
