#pragma once
// One training run of `hetrec bench port`: a config trained with a planned recipe, the
// GEMM selection and the kernel variants of one side of the comparison, for a given
// number of samples, then evaluated on the whole evaluation set.
#include <cstdint>
#include <optional>
#include <string>

#include "core/log.h"
#include "plan/recipe.h"
#include "train/config.h"

namespace hetrec::cli {

struct PortVariant {
  std::string name;  // "port", "hetrec", "recipe_only", "recipe_gemms"
  Recipe recipe;
  bool model_gemms = false;       // model.gemm_selection = "model" (else cuBLASLt's heuristic)
  std::string gemm_hardware;      // the hardware description the GEMM model predicts for
  std::string tuned_kernels;      // winners file of `hetrec tune` ("" = the built-in kernels)
};

struct PortRunResult {
  std::string name;
  std::string recipe;  // describe_recipe
  int64_t batch = 0;
  int64_t steps = 0;
  int64_t samples = 0;
  double step_ms_median = 0.0;
  double samples_per_s = 0.0;       // batch / median train_step time (the steady state)
  double loop_samples_per_s = 0.0;  // data, staging and step together
  std::optional<double> peak_device_bytes;  // GPU: the caching allocator's peak
  std::optional<double> device_used_bytes;  // GPU: cudaMemGetInfo used at the end
  double auc = 0.0;
  double log_loss = 0.0;
  int64_t eval_samples = 0;
  std::string device;
  std::string note;  // what the backend could not apply (e.g. 16-bit GEMMs on the CPU)
};

// Whether `cfg` trains on the GPU backend here (built, a device visible, train.device
// not "cpu").
bool trains_on_gpu(const RunConfig& cfg);

// Trains `base` with the variant for `samples` samples (a multiple of the batch) and
// evaluates it. On the CPU backend the GEMMs run in fp32 whatever the recipe's dense
// precision, with cuBLASLt and tuned kernels absent (said in `note`).
PortRunResult run_port_variant(const RunConfig& base, const PortVariant& v, int64_t samples, const Logger& log);

}  // namespace hetrec::cli
