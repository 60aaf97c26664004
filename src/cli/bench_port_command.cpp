// `hetrec bench port`: the direct-port benchmark. On the local accelerator it trains the
// same model on the same data for the same number of samples twice in one process:
//   port    the recipe planned for --from (default h100_sxm), cuBLASLt's heuristic for every
//           GEMM, the built-in kernels: a recipe moved unchanged;
//   hetrec  the recipe planned for the local accelerator (--to, default: the hardware file
//           of the device), GEMMs chosen by the GEMM model, the tuned kernels of
//           tune/winners.json;
// and with --components also the recipe alone and the recipe with the GEMM selection, so
// that each component's share of the gain is measured by switching it alone. Reports
// samples/s, their ratio, peak memory, eval AUC and log-loss at equal samples, and writes
// the results file (bench/results/direct-port-<date>.json by default).
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/bench_port_run.h"
#include "cli/build_info.h"
#include "cli/commands.h"
#include "cli/hw_dir.h"
#include "core/error.h"
#include "core/exclusive_file.h"
#include "core/install_paths.h"
#include "core/log.h"
#include "plan/constraints_toml.h"
#include "plan/port_comparison.h"
#include "plan/search.h"
#include "train/config.h"
#include "train/plan_targets.h"
#if defined(HETREC_WITH_GPU)
#include "gpu/device.h"
#endif

namespace hetrec::cli {
namespace {

// The ratio hetrec must reach against the port on its own hardware (docs/planner.md,
// "The direct-port benchmark"): the product's reason to exist, with margin over noise.
constexpr double kRequiredRatio = 1.3;
// Default length: this many steps of the larger of the two batches.
constexpr int64_t kDefaultStepsOfLargerBatch = 30;

struct PortOptions {
  std::string config;
  std::vector<std::string> overrides;
  std::string from = "h100_sxm";
  std::string to;  // empty: the local device's hardware file
  int64_t samples = 0;
  std::string out;
  std::string hw_dir = default_hw_dir();
  std::string measurements = data_dir() + "/bench/results";
  bool no_calibration = false;
  std::string constraints_file;
  int64_t max_batch = 0;
  std::string tuned_kernels = data_dir() + "/tune/winners.json";
  bool components = false;
  std::string hetrec_config;  // the model hetrec trains, when revised (`hetrec plan --revise`); "": --config
  std::string command_line;
};

std::string utc_date(const char* format) {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, format, &tm);
  return buf;
}

// The hardware file of the local accelerator: --to, else the one matching the GPU's name.
std::string local_hardware(const PortOptions& o, const RunConfig& cfg) {
  if (!o.to.empty()) return o.to;
#if defined(HETREC_WITH_GPU)
  if (trains_on_gpu(cfg)) return hardware_for_device(gpu::device_properties(0).name, o.hw_dir, "--to").name;
#endif
  (void)cfg;
  throw ConfigError("bench port: this run trains on the CPU backend, which has no hardware description in " +
                    o.hw_dir + " (its files describe GPUs); name the hardware to plan the local recipe for with --to");
}

// A data file's path as the results file records it: relative to the data folder when it
// lies there, so that a record names no machine's folders.
std::string recorded_path(const std::string& path) {
  const std::string dir = data_dir() + "/";
  return path.starts_with(dir) ? path.substr(dir.size()) : path;
}

nlohmann::json run_json(const PortRunResult& r, const PortVariant& v) {
  nlohmann::json j = {{"name", r.name},
                      {"recipe", r.recipe},
                      {"planned_for", v.recipe.hardware},
                      {"batch", r.batch},
                      {"steps", r.steps},
                      {"samples", r.samples},
                      {"dense", std::string(dense_precision_name(v.recipe.dense))},
                      {"row_dtype", std::string(dtype_name(v.recipe.row_dtype))},
                      {"host_tables", v.recipe.host_tables()},
                      {"gemm_selection", v.model_gemms ? "model" : "library"},
                      {"tuned_kernels", recorded_path(v.tuned_kernels)},
                      {"step_ms_median", r.step_ms_median},
                      {"samples_per_s", r.samples_per_s},
                      {"loop_samples_per_s", r.loop_samples_per_s},
                      {"auc", r.auc},
                      {"log_loss", r.log_loss},
                      {"eval_samples", r.eval_samples},
                      {"device", r.device}};
  j["peak_device_bytes"] = r.peak_device_bytes ? nlohmann::json(*r.peak_device_bytes) : nlohmann::json(nullptr);
  j["device_used_bytes"] = r.device_used_bytes ? nlohmann::json(*r.device_used_bytes) : nlohmann::json(nullptr);
  if (!r.note.empty()) j["note"] = r.note;
  return j;
}

void print_run(const PortRunResult& r) {
  std::printf("%-12s %-60s %10.0f samples/s  AUC %.5f  log-loss %.5f", r.name.c_str(), r.recipe.c_str(),
              r.samples_per_s, r.auc, r.log_loss);
  if (r.peak_device_bytes) std::printf("  peak %.2f GiB", *r.peak_device_bytes / (1024.0 * 1024.0 * 1024.0));
  std::printf("\n");
  if (!r.note.empty()) std::printf("             (%s)\n", r.note.c_str());
  std::fflush(stdout);
}

void run_bench_port(const PortOptions& o) {
  const RunConfig cfg = load_run_config(o.config, o.overrides);
  // Both plans are bound to the ported config's batch (bind_batch_to_config) unless the
  // constraints file or --max-batch says otherwise.
  PlanConstraints constraints;
  bind_batch_to_config(constraints, cfg.train.batch_size);
  if (!o.constraints_file.empty()) apply_constraints_file(o.constraints_file, constraints);
  if (o.max_batch > 0) constraints.max_batch = o.max_batch;
  validate_constraints(constraints);
  const std::string to = local_hardware(o, cfg);
  if (to == o.from) throw ConfigError("bench port: --from " + o.from + " is the local hardware; name another one");

  const RunConfig local_cfg = o.hetrec_config.empty() ? cfg : load_run_config(o.hetrec_config, o.overrides);
  if (local_cfg.data.format != cfg.data.format || local_cfg.data.synthetic.seed != cfg.data.synthetic.seed ||
      local_cfg.data.train_path != cfg.data.train_path)
    throw ConfigError("bench port: --hetrec-config " + o.hetrec_config + " trains other data than " + o.config +
                      " (data.format, data.train_path and data.synthetic.seed must agree)");
  const Workload w{cfg.model, cfg.optim, IdDistribution{IdLaw::zipf, cfg.data.synthetic.zipf_exponent}};
  const Workload local_w{local_cfg.model, local_cfg.optim,
                         IdDistribution{IdLaw::zipf, local_cfg.data.synthetic.zipf_exponent}};
  const auto fitted = calibrate_from_records(o.measurements, o.hw_dir, o.no_calibration);
  const PlanTarget from_target = make_plan_target(o.from, o.hw_dir, fitted);
  const PlanTarget to_target = make_plan_target(to, o.hw_dir, fitted);
  // The hetrec run loads the tuned kernels; the port runs the built-in ones.
  PlanTarget hetrec_target = to_target;
#if defined(HETREC_WITH_GPU)
  price_tuned_kernels(hetrec_target, o.tuned_kernels, "bench port: --tuned-kernels");
#else
  // Without a GPU backend no tuned kernel runs or is priced; the file named must still exist.
  if (!o.tuned_kernels.empty() && !std::filesystem::is_regular_file(o.tuned_kernels))
    throw ConfigError("bench port: --tuned-kernels '" + o.tuned_kernels + "': no such file");
#endif
  const PlanResult from_plan = plan_recipes(w, from_target, constraints);
  const PlanResult to_plan = plan_recipes(local_w, hetrec_target, constraints);
  const PortComparison predicted =
      compare_direct_port(w, from_plan, plan_recipes(w, to_target, constraints), to_target, constraints);
  if (!predicted.ported.fits)
    throw ConfigError("bench port: the recipe planned for " + o.from + " does not fit " + to + ": " +
                      predicted.ported.refusal);

  PortVariant port{"port", from_plan.best().recipe, false, "", ""};
  PortVariant hetrec{"hetrec", to_plan.best().recipe, true, to, o.tuned_kernels};
  std::vector<PortVariant> variants = {port};
  if (o.components) {
    variants.push_back(PortVariant{"recipe_only", hetrec.recipe, false, "", ""});
    variants.push_back(PortVariant{"recipe_gemms", hetrec.recipe, true, to, ""});
  }
  variants.push_back(hetrec);

  const int64_t step = std::max(port.recipe.batch, hetrec.recipe.batch);  // powers of two: a common multiple
  const int64_t wanted = o.samples > 0 ? o.samples : kDefaultStepsOfLargerBatch * step;
  const int64_t samples = (wanted + step - 1) / step * step;
  std::printf("bench port: %s, %lld samples per run; port = plan for %s, hetrec = plan for %s\n", o.config.c_str(),
              static_cast<long long>(samples), o.from.c_str(), to.c_str());

  Logger log(parse_log_level(cfg.train.log_level));
  std::vector<PortRunResult> results;
  nlohmann::json runs = nlohmann::json::array();
  for (const PortVariant& v : variants) {
    results.push_back(run_port_variant(v.name == "port" ? cfg : local_cfg, v, samples, log));
    print_run(results.back());
    runs.push_back(run_json(results.back(), v));
  }
  const PortRunResult& p = results.front();
  const PortRunResult& h = results.back();
  const double ratio = h.samples_per_s / p.samples_per_s;
  std::printf("hetrec / port = %.3f (predicted %.3f); AUC hetrec - port = %+.5f\n", ratio,
              to_plan.best().step.samples_per_s / predicted.ported.step.samples_per_s, h.auc - p.auc);

  nlohmann::json j;
  j["benchmark"] = "direct-port";
  j["what"] = "the recipe planned for " + o.from + " with cuBLASLt's heuristic GEMMs and the built-in kernels (port) " +
              "against the recipe planned for " + to + " with the GEMM model's choices and the tuned kernels (hetrec), " +
              "trained on " + o.config + " for the same samples in one process";
  j["date"] = utc_date("%Y-%m-%d");
  j["hardware"] = to;
  j["gpu"] = h.device;
  const char* commit = std::getenv("HETREC_COMMIT");
  j["commit"] = commit ? commit : kBuildCommit;
  j["command"] = o.command_line;
  j["baseline"] = "port";
  j["ratio"] = ratio;
  j["floor"] = {{"ratio", kRequiredRatio},
                {"auc_loss", 0.0005},
                {"what", "the ratio hetrec must reach against the port, with the AUC at equal samples no more than "
                         "auc_loss below the port's"}};
  j["from"] = o.from;
  j["to"] = to;
  j["config"] = o.config;
  j["samples"] = samples;
  j["port_samples_per_s"] = p.samples_per_s;
  j["hetrec_samples_per_s"] = h.samples_per_s;
  j["auc_port"] = p.auc;
  j["auc_hetrec"] = h.auc;
  j["logloss_port"] = p.log_loss;
  j["logloss_hetrec"] = h.log_loss;
  j["peak_bytes_port"] = runs.front()["peak_device_bytes"];
  j["peak_bytes_hetrec"] = runs.back()["peak_device_bytes"];
  j["hetrec_config"] = o.hetrec_config.empty() ? o.config : o.hetrec_config;
  j["predicted_ratio"] = to_plan.best().step.samples_per_s / predicted.ported.step.samples_per_s;
  j["predicted_port_samples_per_s"] = predicted.ported.step.samples_per_s;
  j["predicted_hetrec_samples_per_s"] = to_plan.best().step.samples_per_s;
  if (o.components) {
    nlohmann::json c;
    for (std::size_t i = 1; i < results.size(); ++i) c[results[i].name] = results[i].samples_per_s / p.samples_per_s;
    j["components"] = c;  // each run's samples/s over the port's: recipe, + GEMM selection, + tuned kernels
  }
  j["runs"] = runs;
  const std::string out = o.out.empty() ? "bench/results/direct-port-" + utc_date("%Y%m%d") + ".json" : o.out;
  write_file_atomically(out, j.dump(1) + "\n");
  std::printf("wrote %s\n", out.c_str());
}

}  // namespace

void add_bench_command(CLI::App& app, Action& action) {
  CLI::App* bench = app.add_subcommand("bench", "benchmarks of the engine against its alternatives");
  bench->require_subcommand(1);
  auto o = std::make_shared<PortOptions>();
  CLI::App* cmd = bench->add_subcommand(
      "port", "train a config with the recipe planned for another accelerator (the direct port) and with hetrec's own");
  cmd->add_option("--config,-c", o->config, "model/data/train config (TOML)")->required();
  cmd->add_option("--set", o->overrides, "override a config key (repeatable)");
  cmd->add_option("--from", o->from, "hardware the ported recipe was planned for")->capture_default_str();
  cmd->add_option("--to", o->to, "hardware of the local accelerator (default: the GPU's hardware file)");
  cmd->add_option("--samples", o->samples, "samples per run, rounded up to the larger batch (default 30 of its steps)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--out", o->out, "results file (default bench/results/direct-port-<date>.json)");
  cmd->add_option("--hw-dir", o->hw_dir, "folder of hardware description files")->capture_default_str();
  cmd->add_option("--measurements", o->measurements, "recorded results the step model is calibrated on")
      ->capture_default_str();
  cmd->add_flag("--no-calibration", o->no_calibration, "use the generic step-model factors");
  cmd->add_option("--constraints", o->constraints_file, "quality constraints file ([plan] table, as `hetrec plan`)");
  cmd->add_option("--max-batch", o->max_batch,
                  "largest batch either plan may take (default: the config's train.batch_size, which its learning "
                  "rates are tuned for)")->check(CLI::PositiveNumber);
  cmd->add_option("--tuned-kernels", o->tuned_kernels, "winners file of `hetrec tune` for the hetrec run (\"\": none)")
      ->capture_default_str();
  cmd->add_option("--hetrec-config", o->hetrec_config,
                  "the model hetrec trains (e.g. the config `hetrec plan --revise` wrote; same data as --config)");
  cmd->add_flag("--components", o->components,
                "also run the local recipe alone and with the GEMM selection (each component's share)");
  cmd->callback([o, &action] {
    // The command line as parsed, for the results file.
    std::string c = "hetrec bench port --config " + o->config + " --from " + o->from;
    if (!o->to.empty()) c += " --to " + o->to;
    if (o->samples > 0) c += " --samples " + std::to_string(o->samples);
    if (o->max_batch > 0) c += " --max-batch " + std::to_string(o->max_batch);
    if (!o->constraints_file.empty()) c += " --constraints " + o->constraints_file;
    if (o->components) c += " --components";
    if (!o->hetrec_config.empty()) c += " --hetrec-config " + o->hetrec_config;
    for (const std::string& s : o->overrides) c += " --set '" + s + "'";
    o->command_line = c;
    action = [o] { run_bench_port(*o); };
  });
}

}  // namespace hetrec::cli
