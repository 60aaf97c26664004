// `hetrec plan` writes recipes that `hetrec train --recipe` runs unchanged, and refuses a
// recipe that does not fit with the largest consumers named.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "cli_test_support.h"

using namespace hetrec::test;
namespace fs = std::filesystem;

TEST(CliPlan, RecipeRunsUnchangedInTrain) {
  const auto dir = scratch_dir("plan");
  // fp32 and tf32 GEMMs only: the H100 recipe drives a CPU training run below, and the
  // CPU backend computes the dense layers in fp32 (a bf16 recipe is refused there). MLPerf's
  // batch, and a lower precision must gain 10%: the H200 keeps fp32 rows.
  auto r = run_hetrec("plan --config configs/dlrm_dcnv2_mlperf.toml --hw h100_sxm,h200_sxm --dense fp32,tf32 "
                      "--max-batch 65536 --lower-precision-gain 0.1 --out '" +
                          (dir / "plan.toml").string() + "' --svg '" + (dir / "plan.svg").string() + "'",
                      dir);
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  const std::string h100 = slurp(dir / "plan-h100_sxm.toml"), h200 = slurp(dir / "plan-h200_sxm.toml");
  // The 104.5 GB of fp32 rows fit the H200's HBM but not the H100's: the H100 recipe
  // must store the rows in 16 bits, the H200 one keeps fp32.
  EXPECT_NE(h200.find("row_dtype = \"fp32\""), std::string::npos) << h200;
  EXPECT_EQ(h100.find("row_dtype = \"fp32\""), std::string::npos) << h100;
  const std::string svg = slurp(dir / "plan.svg");
  EXPECT_NE(svg.find("<svg"), std::string::npos);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  // The recipe planned for the H100 drives a (small, CPU) training run as is.
  r = run_hetrec("train --config configs/demo.toml --recipe '" + (dir / "plan-h100_sxm.toml").string() +
                     "' --set train.steps=2 --set train.progress=off --set train.log_level=warn"
                     " --set train.eval_samples=1000 --set train.checkpoint_dir='" + (dir / "ckpt").string() +
                     "' --set train.metrics_path='" + (dir / "metrics.jsonl").string() + "'",
                 dir);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("steps             2 (131072 samples"), std::string::npos) << r.out;
  fs::remove_all(dir);
}

// By default the batch is the config's train.batch_size (its learning rates are tuned
// there); --min-batch, --max-batch or a constraints file looks elsewhere, and the plan says
// what that costs the user.
TEST(CliPlan, BatchIsBoundToTheConfigsUnlessTold) {
  const auto dir = scratch_dir("bound");
  auto r = run_hetrec("plan --config configs/demo.toml --hw h200_sxm --out '" + (dir / "bound.toml").string() + "'", dir);
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("batch 2048..2048"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(batch the config's train.batch_size 2048"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("retune"), std::string::npos) << r.out;
  EXPECT_NE(slurp(dir / "bound.toml").find("batch_size = 2048\n"), std::string::npos) << slurp(dir / "bound.toml");

  r = run_hetrec("plan --config configs/demo.toml --hw h200_sxm --max-batch 65536", dir);
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("h200_sxm: batch 65536 is larger than the config's train.batch_size 2048, which its learning "
                       "rates are tuned for: the model trains another trajectory (retune them"),
            std::string::npos)
      << r.out;

  // Below the config's batch on request: more updates per sample, named as such. The demo's
  // step on the H200 is overhead-bound, so the smallest batch is the slowest and never chosen;
  // a one-batch range forces it.
  r = run_hetrec("plan --config configs/demo.toml --hw h200_sxm --min-batch 1024 --max-batch 1024", dir);
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("h200_sxm: batch 1024 is smaller than the config's train.batch_size 2048, which its learning "
                       "rates are tuned for: the model trains another trajectory (more updates per sample"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("(batch the config's"), std::string::npos) << r.out;

  std::ofstream(dir / "c.toml") << "[plan]\nmax_batch = 8192\n";
  r = run_hetrec("plan --config configs/demo.toml --hw h200_sxm --constraints '" + (dir / "c.toml").string() + "'", dir);
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("batch 8192 is larger than the config's train.batch_size 2048"), std::string::npos) << r.out;

  // The header names the precisions the search allowed, as the file set them.
  std::ofstream(dir / "rows.toml") << "[plan]\nrows = [\"fp32\"]\ndense = [\"tf32\"]\n";
  r = run_hetrec("plan --config configs/demo.toml --hw h200_sxm --constraints '" + (dir / "rows.toml").string() + "'", dir);
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("GEMMs tf32, rows fp32,"), std::string::npos) << r.out;

  // A smallest batch above the bound, with nothing to lift the bound, is a contradiction.
  r = run_hetrec("plan --config configs/demo.toml --hw h200_sxm --min-batch 4096", dir);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.err.find("--min-batch 4096 is above the config's train.batch_size 2048"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("give --max-batch too"), std::string::npos) << r.err;
  fs::remove_all(dir);
}

TEST(CliPlan, PortedRecipeThatDoesNotFitIsRefused) {
  const auto dir = scratch_dir("port");
  // Past MLPerf's batch, where the H200 recipe outgrows the H100's memory.
  const auto r =
      run_hetrec("plan --config configs/dlrm_dcnv2_mlperf.toml --hw h100_sxm --port-from h200_sxm --max-batch 262144", dir);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("does not fit: needs"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("largest consumers: embedding rows"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("the ported recipe cannot run"), std::string::npos) << r.out;
  fs::remove_all(dir);
}

// --evaluate predicts one given recipe (the config with the recipe applied, host tables
// included) as JSON; a timing run of `hetrec train` reports its step time in the metrics.
TEST(CliPlan, EvaluateWritesThePredictionOfOneRecipe) {
  const auto dir = scratch_dir("evaluate");
  {
    std::ofstream recipe(dir / "r.toml");
    recipe << "[recipe]\nbatch_size = 32768\ndense_dtype = \"bf16\"\nrow_dtype = \"fp16\"\nhost_tables = [\"t0\", \"t9\"]\n";
  }
  auto r = run_hetrec("plan --config configs/dlrm_dcnv2_capped.toml --hw h200_sxm --evaluate '" + (dir / "r.toml").string() +
                          "' --json '" + (dir / "e.json").string() + "'",
                      dir);
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  const std::string j = slurp(dir / "e.json");
  for (const char* field : {"\"step_ms\"", "\"samples_per_s\"", "\"device_bytes\"", "\"phase_ms\"", "\"embedding_fwd\"",
                            "\"batch_size\": 32768", "\"dense\": \"bf16\"", "\"row_dtype\": \"fp16\"", "\"t9\"",
                            "\"fits\": true", "\"cross_residual\": \"fp32\""})
    EXPECT_NE(j.find(field), std::string::npos) << field << " missing from " << j.substr(0, 400);
  EXPECT_NE(r.out.find("2 tables in host memory (t0, t9)"), std::string::npos) << r.out;
  // The recipe's residual stream is part of what was predicted, and the JSON says which.
  {
    std::ofstream recipe(dir / "r16.toml");
    recipe << "[recipe]\nbatch_size = 32768\ndense_dtype = \"bf16\"\nrow_dtype = \"fp16\"\ncross_residual = \"16bit\"\n";
  }
  r = run_hetrec("plan --config configs/dlrm_dcnv2_capped.toml --hw h200_sxm --evaluate '" + (dir / "r16.toml").string() +
                     "' --json '" + (dir / "e16.json").string() + "'",
                 dir);
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  EXPECT_NE(slurp(dir / "e16.json").find("\"cross_residual\": \"16bit\""), std::string::npos);
  // Two --hw are refused.
  r = run_hetrec("plan --config configs/dlrm_dcnv2_capped.toml --hw h200_sxm,h100_sxm --evaluate '" +
                     (dir / "r.toml").string() + "'",
                 dir);
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("--evaluate: expected exactly one --hw"), std::string::npos) << r.err;
  fs::remove_all(dir);
}

TEST(CliTrain, TimingRunReportsStepTimeWithoutEvaluation) {
  const auto dir = scratch_dir("timing");
  const auto r = run_hetrec("train --config configs/demo.toml --set train.steps=6 --set train.timing_warmup_steps=2"
                            " --set train.eval_every=0 --set train.eval_at_end=false --set train.progress=off"
                            " --set train.checkpoint_dir='' --set train.metrics_path='" +
                                (dir / "m.jsonl").string() + "'",
                            dir);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("(4 timed steps)"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("eval AUC"), std::string::npos) << r.out;
  const std::string m = slurp(dir / "m.jsonl");
  EXPECT_NE(m.find("\"timed_steps\":4"), std::string::npos) << m;
  EXPECT_NE(m.find("\"step_ms_median\""), std::string::npos) << m;
  EXPECT_EQ(m.find("\"type\":\"eval\""), std::string::npos) << m;
  fs::remove_all(dir);
}

// bench/plan_recipes.py end to end on the CPU (its --device cpu dry run on the demo
// config): a given recipe with host tables, the one planned here and the ones planned
// for the H100 and the A100 (the direct ports) are predicted and
// trained, and the results file has the planner fields with the exact commands.
TEST(CliPlan, RecipeMeasurementScriptWritesThePlannerResults) {
  const auto dir = scratch_dir("plan_recipes");
  {
    std::ofstream recipe(dir / "r.toml");
    recipe << "[recipe]\nbatch_size = 256\ndense_dtype = \"fp32\"\nrow_dtype = \"fp16\"\nhost_tables = [\"t1\"]\n";
    // The same run (a planner's header and hardware do not change training) ...
    std::ofstream same(dir / "same.toml");
    same << "# planned\n[recipe]\nhardware = \"h100_sxm\"\nbatch_size = 256\ndense_dtype = \"fp32\"\n"
            "row_dtype = \"fp16\"\nhost_tables = [ \"t1\" ]\npredicted_step_ms = 1.5\n";
    // ... and another one: a key the first leaves to the config.
    std::ofstream other(dir / "other.toml");
    other << "[recipe]\nbatch_size = 256\ndense_dtype = \"fp32\"\nrow_dtype = \"fp16\"\nhost_tables = [\"t1\"]\n"
             "cross_residual = \"16bit\"\n";
  }
  const std::string cmd = std::string("cd ") + HETREC_SOURCE_DIR + " && python3 bench/plan_recipes.py --hetrec " +
                          HETREC_EXE + " --out-dir '" + (dir / "out").string() +
                          "' --device cpu --steps 3 --warmup 1 --run configs/demo.toml '" + (dir / "r.toml").string() + "' '" +
                          (dir / "same.toml").string() + "' '" + (dir / "other.toml").string() + "' --planned configs/demo.toml --tag test"
                          " --plan-args '--dense fp32,tf32,bf16 --allow-host-tables --max-batch 65536"
                          " --lower-precision-gain 0.1' >'" + (dir / "log.txt").string() + "' 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << slurp(dir / "log.txt");
  std::string results;
  for (const auto& e : fs::directory_iterator(dir / "out"))
    if (e.path().filename().string().rfind("planner-", 0) == 0) results = slurp(e.path());
  ASSERT_FALSE(results.empty()) << slurp(dir / "log.txt");
  for (const char* field : {"\"benchmark\": \"planner\"", "\"max_step_error\"", "\"max_memory_error\"",
                            "\"chosen_vs_best\"", "\"chosen_vs_direct_port\"", "\"step_ms_median\"",
                            "\"step_error_pct\"", "\"train_command\"", "\"predict_command\"", "\"role\": \"direct_port\"",
                            "\"t1\"", "\"measured_recipes\": 6", "\"planned_for\": \"a100_sxm_40gb\"",
                            "\"same_run_as\": \"r\""})
    EXPECT_NE(results.find(field), std::string::npos) << field << " missing";
  // same.toml shares r.toml's run; other.toml has its own.
  std::map<std::string, std::string> same_run_as;
  const nlohmann::json doc = nlohmann::json::parse(results);
  for (const auto& e : doc["metrics"]["recipes"])
    same_run_as[e["name"].get<std::string>()] = e.value("same_run_as", std::string());
  EXPECT_EQ(same_run_as.at("same"), "r");
  EXPECT_EQ(same_run_as.at("other"), "");
  EXPECT_EQ(same_run_as.at("r"), "");
  fs::remove_all(dir);
}
