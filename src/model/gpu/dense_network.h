#pragma once
// The dense part of the GPU model: its parameters, initialised on the host exactly as the
// CPU model initialises them (model/dlrm.cpp, the same seed streams), so both start from
// the same values, and the layers that read them: the bottom MLP, the DCNv2 cross net
// (when the model has cross layers) and the top MLP, in the GEMM precision given. A 16-bit
// cross net hands the top MLP its output as the 16-bit operand it writes anyway.
#include <memory>
#include <string>

#include "core/tensor.h"
#include "gemm/cublaslt_gemm.h"
#include "gpu/stream.h"
#include "model/gpu/dense_parameters.h"
#include "model/gpu/gpu_cross_net.h"
#include "model/gpu/gpu_mlp.h"
#include "model/model_config.h"

namespace hetrec::inline model::gpu_model {

struct GpuDenseNetwork {
  std::unique_ptr<DenseParameters> params;
  std::unique_ptr<GpuMlp> bottom;
  std::unique_ptr<GpuCrossNet> cross;  // DCNv2 with cross layers
  std::unique_ptr<GpuMlp> top;
};

// Throws ConfigError for optim.* the CPU model's dense optimizer refuses.
GpuDenseNetwork make_dense_network(const ModelConfig& model, const OptimConfig& optim, cublaslt::Precision precision,
                                   Allocator& device, gpu::stream_t stream);

// The layers of a 16-bit network that keep fp32 operands (a width not a multiple of 8; their
// GEMMs run on the TF32 pipe unless model.unaligned_gemms = "fp32"), as "bottom_mlp[0], cross_net";
// empty when none.
std::string fp32_layers(const GpuMlp& bottom, const GpuCrossNet* cross, const GpuMlp& top);

}  // namespace hetrec::model::gpu_model
