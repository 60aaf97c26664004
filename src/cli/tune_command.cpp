// `hetrec tune`: search kernel variants on this GPU and keep the measured winners.
#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/hw_dir.h"
#include "core/error.h"
#include "hw/hardware.h"
#include "train/config.h"
#if defined(HETREC_WITH_GPU)
#include "gpu/device.h"
#include "model/gpu/gpu_embeddings.h"
#include "tune/gpu/tune_session.h"
#include "tunable/small_gemm/small_gemm_cost.h"
#endif

namespace hetrec::cli {

namespace {
struct TuneArgs {
  std::string kernel = "all";
  double budget_minutes = 3.0;
  std::string out_dir = "bench/results";
  std::string winners = "tune/winners.json";
  std::string hw;  // empty: the description of this GPU
  std::string hw_dir = default_hw_dir();
  std::string config = "configs/dlrm_dcnv2_capped.toml";
  std::vector<std::string> rows = {"fp32", "bf16"};
  std::vector<std::string> cross_operands = {"fp32", "bf16"};
  std::vector<std::string> gemm_operands = {"fp32", "bf16"};
  int64_t batch = 65536;
  double stop_fraction = 0.10;
  double min_occupancy = 0.25;
};
}  // namespace

void add_tune_command(CLI::App& app, Action& action) {
  auto a = std::make_shared<TuneArgs>();
  CLI::App* cmd = app.add_subcommand(
      "tune", "search kernel variants on this GPU (compile, verify against a reference, time) and keep the winners");
  cmd->add_option("--kernel", a->kernel,
                  "kernel to tune: embedding_bag_forward | dot_interaction_forward | embedding_sparse_update | "
                  "dot_interaction_backward | cross_forward | cross_backward | small_gemm | all")
      ->capture_default_str();
  cmd->add_option("--budget", a->budget_minutes, "minutes of candidate search, shared equally by the shapes (each shape's workload preparation and built-in timing come on top)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--out-dir", a->out_dir, "folder for the attempt log (JSON lines) and the results JSON")
      ->capture_default_str();
  cmd->add_option("--winners", a->winners,
                  "winners file the engine loads (HETREC_TUNED_KERNELS=<file> for train, --tuned-kernels for e2e_bench)")
      ->capture_default_str();
  cmd->add_option("--hw", a->hw,
                  "hardware description of this GPU (hw/<name>.toml; default: the one whose device_names or "
                  "display name is the GPU's name)");
  cmd->add_option("--hw-dir", a->hw_dir, "folder of hardware description files")->capture_default_str();
  cmd->add_option("--config,-c", a->config, "config whose [model] tables and row width make the workload")
      ->capture_default_str();
  cmd->add_option("--rows", a->rows, "row dtypes to tune (one shape each): fp32 fp16 bf16")->capture_default_str();
  cmd->add_option("--cross-operands", a->cross_operands,
                  "cross net GEMM operand dtypes to tune (one shape each): fp32 fp16 bf16")
      ->capture_default_str();
  cmd->add_option("--gemm-operands", a->gemm_operands,
                  "small_gemm: operand dtypes to tune the MLPs' narrow layers in (one shape each): fp32 fp16 bf16")
      ->capture_default_str();
  cmd->add_option("--batch", a->batch, "samples per workload batch")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--stop-within", a->stop_fraction, "stop a shape once the best is within this fraction of the floor")
      ->check(CLI::Range(0.0, 10.0))
      ->capture_default_str();
  cmd->add_option("--min-occupancy", a->min_occupancy, "reject compiled variants below this occupancy")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->callback([a, &action] {
    action = [a] {
#if defined(HETREC_WITH_GPU)
      tune::TuneOptions o;
      o.kernels = {a->kernel};
      o.budget_minutes = a->budget_minutes;
      o.out_dir = a->out_dir;
      o.winners_path = a->winners;
      // Without a GPU the description stays empty: run_tuning reports the configuration's
      // errors first, then that no GPU is visible.
      if (a->hw.empty() && gpu::has_device())
        a->hw = hardware_for_device(gpu::device_properties(0).name, a->hw_dir, "--hw").name;
      if (!a->hw.empty()) o.hw = load_hardware_by_name(a->hw, a->hw_dir);
      const RunConfig run = load_run_config(a->config);
      const ModelConfig& model = run.model;
      o.tables = model.tables;
      o.dim = model.embedding_dim;
      o.interaction_self = model.interaction_self;
      for (const std::string& r : a->rows) o.row_dtypes.push_back(parse_dtype(r, "--rows"));
      o.cross_operand_dtypes.clear();
      for (const std::string& t : a->cross_operands) o.cross_operand_dtypes.push_back(parse_dtype(t, "--cross-operands"));
      // Every GEMM of the MLPs' narrow layers, the bottom MLP's input gradient included
      // (the engine does not run it, the comparison bench times it).
      for (const std::string& t : a->gemm_operands) {
        const DType operand = parse_dtype(t, "--gemm-operands");
        for (const auto& g : tune::small_gemm_mlp_gemms("bottom_mlp", model.num_dense, model.bottom_mlp, true, true,
                                                        operand))
          o.small_gemm_shapes.push_back(g.shape);
        for (const auto& g : tune::small_gemm_mlp_gemms("top_mlp", model.interaction_width(), model.top_mlp, false,
                                                        true, operand))
          o.small_gemm_shapes.push_back(g.shape);
      }
      o.sparse_optimizer = gpu_model::sparse_optimizer_kind(run.optim.sparse);
      o.sparse_lr = run.optim.sparse_lr;
      o.sparse_eps = run.optim.eps;
      o.batch = a->batch;
      o.stop_fraction = a->stop_fraction;
      o.min_occupancy = a->min_occupancy;
      std::ostringstream cmdline;
      cmdline << "hetrec tune --kernel " << a->kernel << " --budget " << a->budget_minutes << " --out-dir "
              << a->out_dir << " --winners " << a->winners << " --hw " << a->hw << " --config " << a->config
              << " --batch " << a->batch << " --rows";
      for (const std::string& r : a->rows) cmdline << " " << r;
      cmdline << " --cross-operands";
      for (const std::string& t : a->cross_operands) cmdline << " " << t;
      cmdline << " --gemm-operands";
      for (const std::string& t : a->gemm_operands) cmdline << " " << t;
      o.command_line = cmdline.str();
      const nlohmann::json results = tune::run_tuning(o, std::cerr);
      std::printf("results        %s\n", results["results_file"].get<std::string>().c_str());
      std::printf("attempt log    %s\n", results["attempt_log"].get<std::string>().c_str());
      std::printf("winners        %s (use: HETREC_TUNED_KERNELS=%s hetrec train ...)\n", a->winners.c_str(),
                  a->winners.c_str());
      for (const auto& s : results["shapes"]) {
        std::printf("%s [%s]: built-in %.1f us, winner %s us, floor %.1f us; %d compiled, %d passed, %d pruned\n",
                    s["kernel"].get<std::string>().c_str(), s["shape"].get<std::string>().c_str(),
                    s["default_us"].get<double>(),
                    s.contains("winner_us") ? std::to_string(s["winner_us"].get<double>()).c_str() : "none",
                    s["floor_us"].get<double>(), s["candidates_compiled"].get<int>(),
                    s["candidates_passed"].get<int>(), s["pruned_before_compile"].get<int>());
      }
#else
      (void)a;
      throw ConfigError("hetrec tune: this build has no GPU backend (configure with the 'cuda' preset); tuning "
                        "compiles and times kernels on the device");
#endif
    };
  });
}

}  // namespace hetrec::cli
