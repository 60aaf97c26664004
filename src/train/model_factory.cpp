#include "train/model_factory.h"

#include <omp.h>

#include <cstdlib>

#include "core/error.h"
#include "model/dlrm.h"
#if defined(HETREC_WITH_GPU)
#include "gpu/device.h"
#include "model/gpu/gpu_dlrm.h"
#endif

namespace hetrec {

std::unique_ptr<Model> make_model(const RunConfig& cfg, const Logger& log, std::string* device_out) {
#if defined(HETREC_WITH_GPU)
  const bool gpu_present = gpu::has_device();
  if (cfg.train.device == DeviceChoice::gpu && !gpu_present)
    throw ConfigError(cfg.source + ": config key 'train.device' = \"gpu\": no GPU is visible to this process");
  if (cfg.train.device != DeviceChoice::cpu && gpu_present) {
    GpuModelOptions options;
    options.precision = cfg.model.allow_tf32 ? cublaslt::Precision::tf32 : cublaslt::Precision::fp32;
    // Tuned kernel variants (`hetrec tune` writes the file; docs/tuning.md).
    if (const char* tuned = std::getenv("HETREC_TUNED_KERNELS")) options.tuned_kernels_file = tuned;
    auto model = make_gpu_model(cfg.model, cfg.optim, options);
    if (device_out) *device_out = "gpu: " + gpu::device_properties(options.device).name +
                                  (cfg.model.dense_dtype == DType::bf16  ? " (bf16 GEMMs)"
                                   : cfg.model.dense_dtype == DType::f16 ? " (fp16 GEMMs, loss scaling)"
                                   : cfg.model.allow_tf32                ? " (tf32 GEMMs)"
                                                                         : " (fp32)");
    return model;
  }
  if (cfg.train.device == DeviceChoice::auto_select) log.info("no GPU visible: training on the CPU");
#else
  if (cfg.train.device == DeviceChoice::gpu)
    throw ConfigError(cfg.source + ": config key 'train.device' = \"gpu\": this build has no GPU backend "
                      "(configure with the 'cuda' preset)");
#endif
  if (!cfg.model.host_tables.empty())
    log.info("model.host_tables: the CPU backend keeps every table in host memory; the placement applies to the GPU");
  if (device_out) *device_out = "cpu (" + std::to_string(omp_get_max_threads()) + " threads)";
  return make_cpu_model(cfg.model, cfg.optim);
}

}  // namespace hetrec
