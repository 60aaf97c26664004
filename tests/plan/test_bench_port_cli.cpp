// `hetrec bench port` and `hetrec plan --constraints` through the real program: the
// direct-port benchmark end to end on the CPU backend (the demo config, a few steps), its
// results file's fields, and its errors (unknown hardware, missing config, no local
// hardware description on the CPU); the quality constraints reaching the plan; the tuned
// kernels' winners pricing the plan's runs.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "../cli/cli_test_support.h"

namespace hetrec::test {
namespace {

// Small enough for a CI test: two steps of 8192 samples each run, 8192 eval samples.
const std::string kQuick =
    "bench port --config configs/demo.toml --to h200_sxm --samples 16384 --max-batch 8192 "
    "--set data.synthetic.eval_samples=8192 --set train.device=cpu --no-calibration";

TEST(BenchPortCli, TrainsBothRecipesAndWritesTheResultsFile) {
  const auto dir = scratch_dir("bench_port");
  const auto out = dir / "direct-port.json";
  const RunResult r = run_hetrec(kQuick + " --components --out " + out.string(), dir);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("hetrec / port = "), std::string::npos) << r.out;
  const nlohmann::json j = nlohmann::json::parse(slurp(out));
  for (const char* key : {"what", "date", "hardware", "commit", "baseline", "ratio", "floor", "from", "to",
                          "port_samples_per_s", "hetrec_samples_per_s", "auc_port", "auc_hetrec", "logloss_port",
                          "logloss_hetrec", "predicted_ratio", "components", "runs"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j["from"], "h100_sxm");
  EXPECT_EQ(j["to"], "h200_sxm");
  EXPECT_EQ(j["runs"].size(), 4u);  // port, recipe alone, + GEMM selection, hetrec
  EXPECT_EQ(j["runs"][0]["name"], "port");
  EXPECT_EQ(j["runs"][3]["name"], "hetrec");
  // The shipped winners file, named relative to the data folder (no machine's folders).
  EXPECT_EQ(j["runs"][3]["tuned_kernels"], "tune/winners.json");
  EXPECT_EQ(j["runs"][0]["tuned_kernels"], "");
  for (const auto& run : j["runs"]) {
    EXPECT_EQ(run["samples"], 16384);  // equal samples
    EXPECT_GT(run["samples_per_s"].get<double>(), 0.0);
    EXPECT_GT(run["auc"].get<double>(), 0.0);
    EXPECT_LT(run["auc"].get<double>(), 1.0);
    EXPECT_GT(run["log_loss"].get<double>(), 0.0);
  }
  EXPECT_NEAR(j["ratio"].get<double>(),
              j["hetrec_samples_per_s"].get<double>() / j["port_samples_per_s"].get<double>(), 1e-9);
}

TEST(BenchPortCli, RejectsWhatItCannotRun) {
  const auto dir = scratch_dir("bench_port_errors");
  RunResult r = run_hetrec(kQuick + " --from no_such_gpu --out " + (dir / "x.json").string(), dir);
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("no_such_gpu"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("available"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "x.json"));

  r = run_hetrec("bench port --config configs/no_such_config.toml --to h200_sxm", dir);
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("no_such_config.toml"), std::string::npos) << r.err;

  // The CPU has no hardware description: without --to the run says so.
  r = run_hetrec("bench port --config configs/demo.toml --set train.device=cpu --no-calibration", dir);
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--to"), std::string::npos) << r.err;

  r = run_hetrec("bench port --config configs/demo.toml --to h100_sxm --set train.device=cpu --no-calibration", dir);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("local hardware"), std::string::npos) << r.err;
}

// The co-design demonstration at CPU scale: the H200's revised model (more rows for the
// hashed ids, a larger DCN rank) against the H100's plan of the original, in one run.
TEST(BenchPortCli, RevisedModelAgainstThePort) {
  const auto dir = scratch_dir("bench_port_revised");
  const auto revised = dir / "revised.toml";
  RunResult r = run_hetrec("plan --config configs/dcnv2_hashed_demo.toml --hw h200_sxm --no-calibration --revise "
                           "--revised-config " + revised.string(),
                           dir);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("every table: rows x"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("raw ids per row 16 -> "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("why: "), std::string::npos) << r.out;
  const std::string text = slurp(revised);
  EXPECT_NE(text.find("raw_ids_per_row = "), std::string::npos) << text;
  EXPECT_EQ(text.find("raw_ids_per_row = 16"), std::string::npos) << text;  // the rows took some of the raw space
  const auto out = dir / "port.json";
  r = run_hetrec("bench port --config configs/dcnv2_hashed_demo.toml --hetrec-config " + revised.string() +
                     " --to h200_sxm --samples 16384 --max-batch 8192 --set data.synthetic.eval_samples=8192"
                     " --set train.device=cpu --no-calibration --out " + out.string(),
                 dir);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const nlohmann::json j = nlohmann::json::parse(slurp(out));
  EXPECT_EQ(j["hetrec_config"], revised.string());
  EXPECT_EQ(j["runs"].size(), 2u);
  EXPECT_NE(j["runs"][1]["recipe"], nullptr);
  // Another dataset is refused; --revise plans for one hardware.
  std::ofstream(dir / "other.toml") << slurp(revised).replace(slurp(revised).find("seed = 7"), 8, "seed = 8");
  r = run_hetrec("bench port --config configs/dcnv2_hashed_demo.toml --hetrec-config " + (dir / "other.toml").string() +
                     " --to h200_sxm --set train.device=cpu --no-calibration",
                 dir);
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("other data"), std::string::npos) << r.err;
  r = run_hetrec("plan --config configs/dcnv2_hashed_demo.toml --hw h200_sxm,b200 --no-calibration --revise", dir);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--revise: expected exactly one --hw"), std::string::npos) << r.err;
}

TEST(PlanCli, ConstraintsFileAndFlagsBoundThePlan) {
  const auto dir = scratch_dir("plan_constraints");
  const auto file = dir / "constraints.toml";
  std::ofstream(file) << "[plan]\nmax_batch = 65536\nrows = [\"fp32\"]\n";
  const std::string plan = "plan --config configs/dlrm_dcnv2_mlperf.toml --hw h200_sxm --no-calibration ";
  RunResult r = run_hetrec(plan + "--constraints " + file.string() + " --out " + (dir / "a.toml").string(), dir);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  std::string recipe = slurp(dir / "a.toml");
  EXPECT_NE(recipe.find("batch_size = 65536"), std::string::npos) << recipe;
  EXPECT_NE(recipe.find("row_dtype = \"fp32\""), std::string::npos) << recipe;
  // A flag overrides the file.
  r = run_hetrec(plan + "--constraints " + file.string() + " --rows bf16 --out " + (dir / "b.toml").string(), dir);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  recipe = slurp(dir / "b.toml");
  EXPECT_NE(recipe.find("row_dtype = \"bf16\""), std::string::npos) << recipe;
  EXPECT_NE(recipe.find("batch_size = 65536"), std::string::npos) << recipe;
  // Defaults: the config's batch (MLPerf's 65536), bf16 rows.
  r = run_hetrec(plan + "--out " + (dir / "c.toml").string(), dir);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  recipe = slurp(dir / "c.toml");
  EXPECT_NE(recipe.find("row_dtype = \"bf16\""), std::string::npos) << recipe;
  EXPECT_NE(recipe.find("batch_size = 65536"), std::string::npos) << recipe;
  // A file's max_batch past the config's lifts the bound, and the plan says what it costs.
  std::ofstream(dir / "wide.toml") << "[plan]\nmax_batch = 262144\n";
  r = run_hetrec(plan + "--constraints " + (dir / "wide.toml").string() + " --out " + (dir / "d.toml").string(), dir);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(slurp(dir / "d.toml").find("batch_size = 65536"), std::string::npos) << slurp(dir / "d.toml");
  EXPECT_NE(r.out.find("larger than the config's train.batch_size 65536"), std::string::npos) << r.out;

  std::ofstream(dir / "bad.toml") << "[plan]\nrows = [\"int4\"]\n";
  r = run_hetrec(plan + "--constraints " + (dir / "bad.toml").string(), dir);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("plan.rows"), std::string::npos) << r.err;
}

// --tuned-kernels: a build with a GPU backend prices the runs as loading the winners that
// are fresh on the hardware's GPU (this build's kernel sources, which `hetrec --version`
// names); a build without one refuses the option.
TEST(PlanCli, TunedKernelsPriceTheFreshWinners) {
  const auto dir = scratch_dir("plan_tuned");
  std::ofstream(dir / "recipe.toml") << "[recipe]\nhardware = \"h200_sxm\"\nbatch_size = 131072\n"
                                        "dense_dtype = \"bf16\"\nrow_dtype = \"bf16\"\ncross_residual = \"16bit\"\n";
  const std::string eval = "plan --config configs/dlrm_dcnv2_mlperf.toml --hw h200_sxm --no-calibration --evaluate " +
                           (dir / "recipe.toml").string();
  const RunResult version = run_hetrec("--version", dir);
  ASSERT_EQ(version.code, 0) << version.err;
  const auto at = version.out.find("kernel sources: ");
  const auto winners = dir / "winners.json";
  if (at == std::string::npos) {  // no GPU backend
    std::ofstream(winners) << "{\"schema_version\": 1, \"winners\": []}\n";
    const RunResult r = run_hetrec(eval + " --tuned-kernels " + winners.string(), dir);
    EXPECT_EQ(r.code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("--tuned-kernels '" + winners.string() + "': this build has no GPU backend"),
              std::string::npos)
        << r.err;
    std::filesystem::remove_all(dir);
    return;
  }
  const std::string hash = version.out.substr(at + 16, 16);
  // One H200 cross backward winner at half the built-in kernel's time, under this build's
  // sources, and one under other sources (stale: not loaded, not priced).
  const auto entry = [](const std::string& h, double time_us) {
    return std::string("{\"kernel\": \"cross_backward\", \"shape\": \"op=bf16 width=3456\", \"gpu\": \"NVIDIA H200\", "
                       "\"compute_capability\": \"9.0\", \"driver_version\": 13000, \"source_hash\": \"") +
           h + "\", \"params\": {\"chunk_rows\": 1024, \"col_threads\": 32, \"row_groups\": 4, \"vec\": 4}, "
               "\"time_us\": " + std::to_string(time_us) + ", \"default_us\": 2000, \"floor_us\": 500, \"workload\": \"w\"}";
  };
  std::ofstream(winners) << "{\"schema_version\": 1, \"winners\": [" << entry(hash, 1000) << ", "
                         << entry(hash == "0000000000000000" ? "1111111111111111" : "0000000000000000", 100) << "]}\n";
  const RunResult builtin = run_hetrec(eval + " --json " + (dir / "a.json").string(), dir);
  ASSERT_EQ(builtin.code, 0) << builtin.out << builtin.err;
  const RunResult tuned = run_hetrec(eval + " --json " + (dir / "b.json").string() + " --tuned-kernels " + winners.string(), dir);
  ASSERT_EQ(tuned.code, 0) << tuned.out << tuned.err;
  EXPECT_NE(tuned.out.find("tuned kernels on h200_sxm (" + winners.string() + "): cross_backward x0.500"), std::string::npos)
      << tuned.out;
  const auto phase = [&](const char* file, const char* name) {
    return nlohmann::json::parse(slurp(dir / file))["predicted"]["phase_ms"][name].get<double>();
  };
  EXPECT_LT(phase("b.json", "interaction_bwd"), phase("a.json", "interaction_bwd"));
  EXPECT_EQ(phase("b.json", "interaction_fwd"), phase("a.json", "interaction_fwd"));
  EXPECT_EQ(phase("b.json", "embedding_bwd_update"), phase("a.json", "embedding_bwd_update"));
  const RunResult missing = run_hetrec(eval + " --tuned-kernels " + (dir / "none.json").string(), dir);
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.err.find("none.json': no such file"), std::string::npos) << missing.err;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace hetrec::test
