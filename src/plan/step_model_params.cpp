#include "plan/step_model_params.h"

namespace hetrec::inline plan {

std::string_view step_factor_name(StepFactor f) {
  switch (f) {
    case StepFactor::gemm_fp32: return "gemm_fp32";
    case StepFactor::gemm_tf32: return "gemm_tf32";
    case StepFactor::gemm_16bit: return "gemm_16bit";
    case StepFactor::elementwise: return "elementwise";
    case StepFactor::cross_forward: return "cross_forward";
    case StepFactor::cross_backward: return "cross_backward";
    case StepFactor::interaction: return "interaction";
    case StepFactor::embedding_forward: return "embedding_forward";
    case StepFactor::embedding_backward: return "embedding_backward";
    case StepFactor::upload: return "upload";
    case StepFactor::host_tables: return "host_tables";
    case StepFactor::kernel_overhead_us: return "kernel_overhead_us";
    case StepFactor::step_overhead_us: return "step_overhead_us";
    case StepFactor::fp16_rounding_us: return "fp16_rounding_us";
    case StepFactor::embedding_row_update_us: return "embedding_row_update_us";
    case StepFactor::embedding_row_read_us: return "embedding_row_read_us";
    case StepFactor::peer_link: return "peer_link";
    case StepFactor::collective_latency_us: return "collective_latency_us";
  }
  return "?";
}

bool step_factor_is_overhead(StepFactor f) {
  return f == StepFactor::kernel_overhead_us || f == StepFactor::step_overhead_us ||
         f == StepFactor::fp16_rounding_us || f == StepFactor::embedding_row_update_us ||
         f == StepFactor::embedding_row_read_us ||
         f == StepFactor::collective_latency_us;
}

StepFactor gemm_factor(MatrixPrecision pipe) {
  switch (pipe) {
    case MatrixPrecision::fp32: return StepFactor::gemm_fp32;
    case MatrixPrecision::tf32: return StepFactor::gemm_tf32;
    default: return StepFactor::gemm_16bit;
  }
}

StepModelParams default_step_model_params(const Hardware& hw) {
  StepModelParams p;
  p.arch = hw.arch;
  return p;
}

}  // namespace hetrec::plan::plan
