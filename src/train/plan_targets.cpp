#include "train/plan_targets.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/install_paths.h"
#include "hw/hardware.h"
#include "gemm_perf/gemm_model_params.h"
#include "plan/calibration.h"
#include "plan/e2e_record.h"
#include "plan/planner_record.h"
#include "plan/tuned_kernel_ratios.h"
#include "train/config.h"
#if defined(HETREC_WITH_GPU)
#include "kernels/rtc_sources.h"
#endif

namespace hetrec::inline train {
namespace {

// Older e2e records name e2e_bench's presets instead of a config file.
struct Preset {
  const char* name;
  const char* file;
  const char* arch_override;  // nullptr: the file's own arch
};
constexpr Preset kE2ePresets[] = {
    {"mlperf-dcnv2", "configs/dlrm_dcnv2_mlperf.toml", nullptr},
    {"mlperf-dcnv2-capped", "configs/dlrm_dcnv2_capped.toml", nullptr},
    {"mlperf-dlrm-capped", "configs/dlrm_dcnv2_capped.toml", "model.arch=\"dlrm\""},
};

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The config a record names (a file, or an e2e preset name), found as given or under the
// source tree.
std::optional<RunConfig> record_config(const std::string& config, std::vector<std::string> extra_overrides = {}) {
  std::string file;
  std::vector<std::string> overrides = std::move(extra_overrides);
  if (ends_with(config, ".toml")) {
    file = config;
  } else {
    for (const Preset& p : kE2ePresets)
      if (config == p.name) {
        file = p.file;
        if (p.arch_override) overrides.push_back(p.arch_override);
      }
  }
  if (file.empty()) return std::nullopt;
  for (const std::string& candidate : {file, data_dir() + "/" + file})
    if (std::filesystem::exists(candidate)) return load_run_config(candidate, overrides);
  return std::nullopt;
}

// The hardware description a record's GPU name belongs to ("NVIDIA H200" -> h200_sxm):
// the one that describes_device, when exactly one does.
std::optional<Hardware> record_hardware(const std::string& gpu, const std::vector<Hardware>& all) {
  std::optional<Hardware> found;
  for (const Hardware& h : all)
    if (describes_device(h, gpu)) {
      if (found) return std::nullopt;
      found = h;
    }
  return found;
}

// Step-model parameters per architecture, fitted to the recorded measurements.
}  // namespace

std::map<std::string, StepModelParams> calibrate_from_records(const std::string& measurements, const std::string& hw_dir,
                                                            bool no_calibration) {
  std::map<std::string, StepModelParams> fitted;
  if (no_calibration) return fitted;
  if (!std::filesystem::is_directory(measurements)) {
    std::printf("step model: no measurements folder '%s'; generic factors everywhere\n", measurements.c_str());
    return fitted;
  }
  std::vector<Hardware> all;
  for (const std::string& name : list_hardware(hw_dir)) all.push_back(load_hardware_by_name(name, hw_dir));
  // e2e records (bench/e2e_bench) and planner records (bench/plan_recipes.py). Variant
  // comparisons (e2e-*-variants.json, bench/step_variants_summary.py) are left out: they
  // set builds side by side, older ones among them, so they do not measure this engine.
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(measurements)) {
    const std::string name = entry.path().filename().string();
    if ((name.rfind("e2e-", 0) == 0 || name.rfind("planner-", 0) == 0) && ends_with(name, ".json") &&
        !ends_with(name, "-variants.json"))
      files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  std::map<std::string, std::vector<StepMeasurement>> by_arch;
  std::map<std::string, Hardware> arch_hardware;
  std::map<std::string, GemmSelector> selectors;  // by hardware name
  // The winners whose speed the runs with tuned kernels are priced at (loaded once needed).
  const std::string winners_file = data_dir() + "/tune/winners.json";
  std::optional<tune::WinnersStore> winners;
  const auto selector_for = [&](const Hardware& hw) -> const GemmSelector& {
    auto sel = selectors.find(hw.name);
    if (sel == selectors.end())
      sel = selectors.emplace(hw.name, GemmSelector::for_hardware(hw, load_gemm_params_for(hw, hw_dir + "/params"))).first;
    return sel->second;
  };
  for (const std::string& f : files) {
    // A record that cannot be used is reported and left out; the plan goes on without it.
    try {
      const bool planner = f.substr(f.find_last_of('/') + 1).rfind("planner-", 0) == 0;
      if (planner) {
        const PlannerRecord r = read_planner_record(f);
        const std::optional<Hardware> hw = record_hardware(r.gpu, all);
        if (!hw) throw ConfigError("no single hardware file for GPU '" + r.gpu + "'");
        for (const PlannerRun& run : r.runs) {
          const std::optional<RunConfig> cfg = record_config(run.config);
          if (!cfg) throw ConfigError("config '" + run.config + "' not found");
          // The runs trained on the config's synthetic data: its Zipf ids.
          const IdDistribution ids{IdLaw::zipf, cfg->data.synthetic.zipf_exponent};
          by_arch[hw->arch].push_back(planner_measurement(run, cfg->model, cfg->optim, ids, selector_for(*hw)));
        }
        arch_hardware.emplace(hw->arch, *hw);
        continue;
      }
      const E2eRecord r = read_e2e_record(f);
      const std::optional<Hardware> hw = record_hardware(r.gpu, all);
      if (!hw) throw ConfigError("no single hardware file for GPU '" + r.gpu + "'");
      const std::optional<RunConfig> cfg = record_config(r.config, r.overrides);
      if (!cfg) throw ConfigError("config '" + r.config + "' not found");
      StepMeasurement m = e2e_measurement(r, cfg->model, cfg->optim, selector_for(*hw));
      // A run with tuned kernels: their work at the tuned variants' measured speed.
      if (!r.tuned_variants.empty()) {
        if (!winners) winners = tune::WinnersStore::load(winners_file);
        apply_tuned_ratios(m.work, recorded_tuned_ratios(r.tuned_variants, r.gpu, m.work, *winners, winners_file));
      }
      by_arch[hw->arch].push_back(std::move(m));
      arch_hardware.emplace(hw->arch, *hw);
    } catch (const ConfigError& e) {
      std::printf("step model: leaving out %s: %s\n", f.c_str(), e.what());
    }
  }
  for (const auto& [arch, ms] : by_arch) {
    const CalibrationFit fit = calibrate_step_model(ms, default_step_model_params(arch_hardware.at(arch)));
    std::printf("step model %s: calibrated on %zu recorded steps; rms error %.1f%%, largest step error %.1f%%\n",
                arch.c_str(), ms.size(), 100.0 * fit.rms_log_error, 100.0 * fit.max_step_error);
    std::string factors;
    for (StepFactor f : kAllStepFactors)
      factors += " " + std::string(step_factor_name(f)) + "=" + std::to_string(fit.params.at(f)).substr(0, 6);
    std::printf("  factors:%s\n", factors.c_str());
    fitted[arch] = fit.params;
  }
  return fitted;
}

PlanTarget make_plan_target(const std::string& name, const std::string& hw_dir,
                            const std::map<std::string, StepModelParams>& fitted) {
  const Hardware hw = load_hardware_by_name(name, hw_dir);
  const auto it = fitted.find(hw.arch);
  return PlanTarget{GemmSelector::for_hardware(hw, load_gemm_params_for(hw, hw_dir + "/params")),
                    it != fitted.end() ? it->second : default_step_model_params(hw)};
}

void price_tuned_kernels(PlanTarget& target, const std::string& winners_file, const std::string& option) {
  if (winners_file.empty()) return;
#if defined(HETREC_WITH_GPU)
  if (!std::filesystem::is_regular_file(winners_file))
    throw ConfigError(option + " '" + winners_file + "': no such file");
  target.tuned = fresh_tuned_ratios(tune::WinnersStore::load(winners_file), target.hw(), kernels::rtc_sources_hash());
  std::string ratios;
  for (const auto& [kernel, r] : target.tuned) {
    char x[32];
    std::snprintf(x, sizeof x, " x%.3f", r);
    ratios += (ratios.empty() ? "" : ", ") + kernel + x;
  }
  std::printf("tuned kernels on %s (%s): %s\n", target.hw().name.c_str(), winners_file.c_str(),
              ratios.empty() ? "none fresh, the built-in kernels" : ratios.c_str());
#else
  (void)target;
  throw ConfigError(option + " '" + winners_file +
                    "': this build has no GPU backend, so no kernel sources to tell its fresh winners from stale ones");
#endif
}

}  // namespace hetrec::train::train
