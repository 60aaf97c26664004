#include "cli/bench_port_run.h"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>

#include "core/error.h"
#include "train/trainer.h"
#if defined(HETREC_WITH_GPU)
#include "gpu/device.h"
#endif

namespace hetrec::cli {
namespace {

// The tuned-kernels file the GPU model loads at start (train/model_factory.cpp reads
// HETREC_TUNED_KERNELS when it builds the model): set for one run, then restored.
class TunedKernelsEnv {
 public:
  explicit TunedKernelsEnv(const std::string& file) {
    if (const char* v = std::getenv(kVar)) saved_ = v;
    if (file.empty()) ::unsetenv(kVar);
    else ::setenv(kVar, file.c_str(), 1);
  }
  ~TunedKernelsEnv() {
    if (saved_) ::setenv(kVar, saved_->c_str(), 1);
    else ::unsetenv(kVar);
  }
  TunedKernelsEnv(const TunedKernelsEnv&) = delete;
  TunedKernelsEnv& operator=(const TunedKernelsEnv&) = delete;

 private:
  static constexpr const char* kVar = "HETREC_TUNED_KERNELS";
  std::optional<std::string> saved_;
};

// Steps before the timed ones: a fifth of the run, at most train.timing_warmup_steps.
int64_t warmup_steps(int64_t steps, int64_t configured) { return std::min(configured, steps / 5); }

}  // namespace

bool trains_on_gpu(const RunConfig& cfg) {
#if defined(HETREC_WITH_GPU)
  return cfg.train.device != DeviceChoice::cpu && gpu::has_device();
#else
  (void)cfg;
  return false;
#endif
}

PortRunResult run_port_variant(const RunConfig& base, const PortVariant& v, int64_t samples, const Logger& log) {
  const Recipe& r = v.recipe;
  if (r.batch < 1 || samples % r.batch != 0)
    throw InternalError("bench port: " + std::to_string(samples) + " samples is no multiple of batch " +
                        std::to_string(r.batch));
  RunConfig cfg = base;
  const bool gpu = trains_on_gpu(cfg);
  PortRunResult out;
  out.name = v.name;
  out.recipe = describe_recipe(r, cfg.model);
  out.batch = r.batch;
  out.steps = samples / r.batch;
  out.samples = samples;

  // The recipe, as `hetrec train --recipe` applies it (train/config.cpp apply_recipe).
  cfg.train.batch_size = r.batch;
  cfg.model.row_dtype = r.row_dtype;
  cfg.model.dense_dtype = r.dense == DensePrecision::bf16   ? DType::bf16
                          : r.dense == DensePrecision::fp16 ? DType::f16
                                                            : DType::f32;
  cfg.model.allow_tf32 = r.dense == DensePrecision::tf32;
  cfg.model.host_tables.clear();
  for (std::size_t t = 0; t < r.placement.size(); ++t)
    if (r.placement[t] == TablePlacement::host) cfg.model.host_tables.push_back(cfg.model.tables[t].name);
  cfg.model.gemm_selection = v.model_gemms ? GemmSelection::model : GemmSelection::library;
  cfg.model.gemm_hardware = v.model_gemms ? v.gemm_hardware : std::string();
  if (!gpu) {
    if (cfg.model.dense_dtype != DType::f32 || cfg.model.allow_tf32)
      out.note = "the CPU backend runs the " + std::string(dense_precision_name(r.dense)) + " GEMMs in fp32";
    cfg.model.dense_dtype = DType::f32;
    cfg.model.allow_tf32 = false;
    if (v.model_gemms || !v.tuned_kernels.empty())
      out.note += std::string(out.note.empty() ? "" : "; ") +
                  "GEMM selection and tuned kernels apply to the GPU backend only";
  }
  // One timed run: no checkpoints, metrics or progress line; one evaluation at the end.
  cfg.train.steps = out.steps;
  cfg.train.epochs = 1;
  cfg.train.timing_warmup_steps = warmup_steps(out.steps, cfg.train.timing_warmup_steps);
  cfg.train.eval_every = 0;
  cfg.train.eval_at_end = true;
  cfg.train.eval_samples = 0;
  cfg.train.checkpoint_dir.clear();
  cfg.train.checkpoint_every = 0;
  cfg.train.resume = false;
  cfg.train.metrics_path.clear();
  cfg.train.progress = ProgressMode::off;
  cfg.train.log_every = std::max<int64_t>(out.steps, 1);

  TrainSummary s;
  {
    const TunedKernelsEnv env(gpu ? v.tuned_kernels : std::string());
    Trainer trainer(cfg, log);
    s = trainer.run();
  }
  out.device = s.device;
  out.step_ms_median = s.step_ms_median;
  out.samples_per_s = s.timed_steps > 0 && s.step_ms_median > 0.0 ? 1000.0 * static_cast<double>(r.batch) / s.step_ms_median
                                                                  : s.samples_per_s;
  out.loop_samples_per_s = s.timed_steps > 0 ? s.loop_samples_per_s : s.samples_per_s;
  if (s.memory) {
    out.peak_device_bytes = static_cast<double>(s.memory->allocator_peak_bytes);
    out.device_used_bytes = static_cast<double>(s.memory->device_used_bytes);
  }
  if (s.eval.samples == 0)
    throw ConfigError(base.source + ": bench port needs an evaluation split (synthetic data, or data.eval_path)");
  out.auc = s.eval.auc;
  out.log_loss = s.eval.log_loss;
  out.eval_samples = s.eval.samples;
  return out;
}

}  // namespace hetrec::cli
