#include "train/model_factory.h"

#include <omp.h>

#include <cstdlib>

#include "core/error.h"
#include "model/dlrm.h"
#include "train/memory_admission.h"
#if defined(HETREC_WITH_GPU)
#include "dist/nccl_process_group.h"
#include "gpu/device.h"
#include "model/gpu/gpu_dlrm.h"
#endif

namespace hetrec::inline train {

namespace {

// True when the GPU backend runs this config: it was built, a device is visible and
// train.device is "auto" or "gpu". Throws ConfigError when "gpu" cannot be had; says so
// when "auto" falls back to the CPU.
bool use_gpu(const RunConfig& cfg, const Logger& log) {
#if defined(HETREC_WITH_GPU)
  const bool gpu_present = gpu::has_device();
  if (cfg.train.device == DeviceChoice::gpu && !gpu_present)
    throw ConfigError(cfg.source + ": config key 'train.device' = \"gpu\": no GPU is visible to this process");
  if (cfg.train.device != DeviceChoice::cpu && gpu_present) return true;
  if (cfg.train.device == DeviceChoice::auto_select) log.info("no GPU visible: training on the CPU");
#else
  if (cfg.train.device == DeviceChoice::gpu)
    throw ConfigError(cfg.source + ": config key 'train.device' = \"gpu\": this build has no GPU backend "
                      "(configure with the 'cuda' preset)");
  (void)log;
#endif
  return false;
}

#if defined(HETREC_WITH_GPU)
GpuModelOptions gpu_options(const RunConfig& cfg) {
  GpuModelOptions options;
  options.precision = cfg.model.allow_tf32 ? cublaslt::Precision::tf32 : cublaslt::Precision::fp32;
  // Tuned kernel variants (`hetrec tune` writes the file; docs/tuning.md).
  if (const char* tuned = std::getenv("HETREC_TUNED_KERNELS")) options.tuned_kernels_file = tuned;
  return options;
}

std::string gpu_description(const RunConfig& cfg, int device) {
  return "gpu: " + gpu::device_properties(device).name +
         (cfg.model.dense_dtype == DType::bf16  ? " (bf16 GEMMs)"
          : cfg.model.dense_dtype == DType::f16 ? " (fp16 GEMMs, loss scaling)"
          : cfg.model.allow_tf32                ? " (tf32 GEMMs)"
                                                : " (fp32)");
}
#endif

}  // namespace

std::unique_ptr<Model> make_model(const RunConfig& cfg, const Logger& log, std::string* device_out) {
  if (use_gpu(cfg, log)) {
#if defined(HETREC_WITH_GPU)
    const GpuModelOptions options = gpu_options(cfg);
    gpu::set_device(options.device);
    admit_gpu_model(cfg, gpu::device_properties(options.device).name,
                    static_cast<double>(gpu::memory_info().free_bytes), log);
    auto model = make_gpu_model(cfg.model, cfg.optim, options);
    if (device_out) *device_out = gpu_description(cfg, options.device);
    return model;
#endif
  }
  if (!cfg.model.host_tables.empty())
    log.info("model.host_tables: the CPU backend keeps every table in host memory; the placement applies to the GPU");
  if (device_out) *device_out = "cpu (" + std::to_string(omp_get_max_threads()) + " threads)";
  // A config error before an out-of-memory one; then nothing is allocated unless the run fits.
  validate_cpu_model_config(cfg.model, cfg.optim);
  admit_cpu_model(cfg, log);
  return make_cpu_model(cfg.model, cfg.optim);
}

std::unique_ptr<DistributedModel> make_distributed_model(const RunConfig& cfg, const dist::ShardingPlan& plan,
                                                         dist::ProcessGroup& host,
                                                         std::unique_ptr<dist::ProcessGroup>& device_group,
                                                         const Logger& log, std::string* device_out) {
  const std::string ranks = std::to_string(host.size()) + " ranks";
  if (use_gpu(cfg, log)) {
#if defined(HETREC_WITH_GPU)
    auto devices = std::make_unique<dist::NcclProcessGroup>(host, cfg.train.collective_timeout_s);
    auto model = make_distributed_gpu_model(cfg.model, cfg.optim, gpu_options(cfg), plan, host, *devices);
    if (device_out) *device_out = gpu_description(cfg, devices->device()) + " x " + ranks + " (" + devices->describe() + ")";
    device_group = std::move(devices);
    return model;
#endif
  }
  device_group.reset();  // the CPU model exchanges over `host`
  if (device_out)
    *device_out = "cpu (" + std::to_string(omp_get_max_threads()) + " threads per rank) x " + ranks + " (" +
                  host.describe() + ")";
  return make_distributed_cpu_model(cfg.model, cfg.optim, plan, host);
}

}  // namespace hetrec::train::train
