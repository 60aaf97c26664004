#pragma once
// What a model is: architecture, tables, MLP widths, precisions. Parsed and validated
// from the [model] section of a config file by train/config.cpp.
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "data/feature_spec.h"
#include "nn/embedding_spec.h"
#include "optim/optim_config.h"

namespace hetrec::inline model {

enum class Arch { dlrm, dcnv2 };

// GPU: how each GEMM's cuBLASLt configuration is chosen. library: cuBLASLt's heuristic.
// model: the analytical model's fastest prediction over every configuration cuBLASLt offers
// (gemm/cublaslt_model_choice.h), with no kernel timed.
enum class GemmSelection { library, model };

// GPU: the sort of the embedding backward's occurrences (kernels/sort_pairs.h). engine:
// the engine's radix sort; library: CUB's (CUDA) or rocPRIM's (HIP); automatic: the one
// measured faster on the platform. Both give the same result bit for bit.
enum class SortSelection { automatic, engine, library };

// The inputs (num_dense, tables) come from FeatureSpec, which the data layer shares.
// Where a 16-bit ReLU layer's backward runs (model.relu_backward; model/gpu/relu_mask_fusion.h).
// In the epilogues the forward GEMM stores the ReLU mask as bits and the successor's
// input-gradient GEMM applies it; the bias gradient is summed
//   epilogue  by that input-gradient GEMM too (DRELU_BGRAD), a sum over the batch rows of
//             its output;
//   split     by the layer's own weight-gradient GEMM (DRELU, then BGRADB), a sum along the
//             batch, which is that GEMM's reduction dimension;
//   pass      the engine's own ReLU-backward and bias-sum pass after a plain GEMM.
// With mask_pass no mask bits are stored: the input-gradient GEMM writes the 16-bit
// gradient plainly, a 16-bit pass zeroes it where the layer's 16-bit output is not positive
// (kernels/relu_mask.h), and the weight-gradient GEMM sums the bias gradient as in split.
enum class ReluBackward : uint8_t { epilogue, split, pass, mask_pass };
// The mode's config value.
inline const char* relu_backward_name(ReluBackward r) {
  switch (r) {
    case ReluBackward::epilogue: return "epilogue";
    case ReluBackward::split: return "split";
    case ReluBackward::pass: return "pass";
    case ReluBackward::mask_pass: return "mask_pass";
  }
  return "?";
}

struct ModelConfig : FeatureSpec {
  Arch arch = Arch::dlrm;
  int embedding_dim = 16;
  std::vector<int> bottom_mlp;  // layer widths; the last equals embedding_dim
  std::vector<int> top_mlp;     // layer widths; the last is 1 (the logit)
  // DLRM dot interaction: include the self-dot terms (the diagonal) or not.
  bool interaction_self = false;
  // DCNv2 cross network on the concatenation [bottom output, pooled embeddings].
  int cross_layers = 3;
  int cross_rank = 0;  // 0 = full-rank cross layers; >0 = low-rank U (V^T x)
  // GPU, 16-bit GEMMs: the cross net's residual stream x_l kept in the GEMM operand type
  // ("16bit") instead of fp32 ("fp32"); model/gpu/gpu_cross_net.h. fp32 GEMMs ignore it.
  bool cross_residual_16bit = false;
  // GPU, 16-bit GEMMs: the layers whose widths are not multiples of 8 keep fp32 operands
  // (model/gpu/sixteen_bit_widths.h) and run their GEMMs on the TF32 pipe ("tf32") or in
  // plain fp32 ("fp32"). TF32's 10-bit mantissa rounds no coarser than the bf16 (7-bit) or
  // fp16 (10-bit) operands of the other layers, at 7x fp32's rate on Hopper (494.7 against
  // 67 dense TFLOP/s on an H100 SXM, hw/h100_sxm.toml); a DLRM's 479-wide interaction
  // puts its top MLP's first layer there. model.unaligned_gemms.
  bool unaligned_tf32 = true;
  // GPU, 16-bit GEMMs: a ReLU layer's backward (mask and bias gradient) in cuBLASLt's
  // epilogues where the library fuses them, or as the engine's own pass over the
  // input-gradient GEMM's output (ReluBackward; docs/architecture.md says why each exists).
  ReluBackward relu_backward = ReluBackward::mask_pass;
  DType row_dtype = DType::f32;    // embedding row storage: fp32, fp16 or bf16
  DType dense_dtype = DType::f32;  // dense compute precision (CPU: fp32 only)
  bool allow_tf32 = false;         // GPU: fp32 GEMMs may run on tensor cores as TF32
  GemmSelection gemm_selection = GemmSelection::library;
  SortSelection sort = SortSelection::automatic;
  // GPU, gemm_selection = model: the hardware description (hw/<name>.toml) the model
  // predicts for; empty: the one that describes the device (hw/hardware.h describes_device).
  std::string gemm_hardware;
  // GPU, gemm_selection = model: the model's parameters (a file `hetrec gemm calibrate
  // --params-out` writes); empty: the shipped hw/params/<arch>.toml.
  std::string gemm_params;
  // GPU, gemm_selection = model: the file that keeps the choices across runs ("" = the
  // default, gemm-selections-<device index>.txt in the hetrec cache folder; "none" = kept
  // for this run only).
  std::string gemm_cache;
  // GPU, gemm_selection = model: the learned GEMM ranker whose router chooses
  // (gemm_perf/gemm_ranker.h): "" = the shipped one trained for this GPU, driver and cuBLASLt
  // (gemm/rankers/), if any; a file's path (it must be trained for this device); "none" = the
  // analytical model's fastest prediction alone.
  std::string gemm_ranker;
  // GPU, gemm_selection = model with a ranker: time the ranker's this many best-scored
  // configurations and the heuristic's top-1 once per new GEMM and run the fastest
  // (gemm/cublaslt_shortlist_timing.h); 0 = the router's pick, untimed.
  int gemm_timed_shortlist = 0;
  // GPU: names of the tables whose rows and optimizer state live in page-locked host
  // memory, read and updated in place by the device over the host link (the planner's
  // host placement). Every other table is in device memory. The CPU backend ignores it.
  std::vector<std::string> host_tables;
  uint64_t init_seed = 1;          // parameter initialisation

  EmbeddingSpec embedding_spec() const { return EmbeddingSpec{tables, embedding_dim, row_dtype}; }

  // Width of the interaction output that feeds the top MLP.
  int interaction_width() const {
    const int f = num_tables() + 1;
    if (arch == Arch::dcnv2) return f * embedding_dim;
    return embedding_dim + (interaction_self ? f * (f + 1) / 2 : f * (f - 1) / 2);
  }
};

}  // namespace hetrec::model::model
