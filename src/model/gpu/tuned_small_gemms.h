#pragma once
// The small-GEMM winners (`hetrec tune --kernel small_gemm`) the GPU model's MLPs run in
// place of cuBLASLt, loaded at start from the winners file like the other tuned kernels
// (model/gpu/tuned_kernels.h): a GEMM of a narrow layer whose shape has a winner for
// this GPU, driver and small-GEMM source runs the winner; every other GEMM stays on
// cuBLASLt. A winner exists only where the tuner measured it faster than cuBLASLt's
// heuristic on the same workload.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gpu/device.h"
#include "tunable/small_gemm/small_gemm_tuned.h"
#include "tunable/small_gemm/small_gemm_cost.h"

namespace hetrec::inline model::gpu_model {

// One GEMM of one MLP layer that runs a small-GEMM kernel.
struct SmallGemmUse {
  int layer = 0;
  tune::SmallGemmPass pass = tune::SmallGemmPass::forward;
  const kernels::TunedSmallGemm* kernel = nullptr;
  // With the model's selection (model/gpu/model_small_gemms.h): the kernel's predicted time
  // (us) at a batch, which the MLP compares per batch with the model's prediction for the
  // cuBLASLt configuration of the same GEMM, running the faster. Empty: the kernel always
  // runs (a tuned winner, measured faster than cuBLASLt's heuristic).
  std::function<double(int64_t batch)> predicted_us;
};

// With the model's selection: what ran one narrow GEMM at one batch, and why.
struct SmallGemmDecision {
  std::string gemm;  // "top_mlp.4 forward"
  int64_t batch = 0;
  bool small_gemm = false;       // the small-GEMM kernel ran (else cuBLASLt)
  double small_gemm_us = 0.0;    // its prediction
  std::optional<double> cublaslt_us;  // the prediction for cuBLASLt's configuration (none: its heuristic chose)
  // Where the selection timed them against each other (small_gemm_choice.h), the measured
  // microseconds per launch; the decision then follows these.
  std::optional<double> small_gemm_measured_us, cublaslt_measured_us;
};

struct TunedSmallGemms {
  std::vector<std::unique_ptr<kernels::TunedSmallGemm>> kernels;
  std::vector<SmallGemmUse> bottom, top;  // per MLP
  std::string note;                       // for the model's description; empty when none loaded
};

// `bottom` and `top`: the MLPs' narrow-layer GEMMs (tune::small_gemm_mlp_gemms with fp32
// operands: the engine runs those layers in fp32 at every dense precision). An empty
// `winners_file` loads nothing. Throws ConfigError for a malformed file and DeviceError
// when a matching winner fails to compile.
TunedSmallGemms load_tuned_small_gemms(const std::string& winners_file, const gpu::DeviceProperties& device,
                                       const std::vector<tune::SmallGemmLayerGemm>& bottom,
                                       const std::vector<tune::SmallGemmLayerGemm>& top);

}  // namespace hetrec::model::gpu_model
