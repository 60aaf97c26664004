#pragma once
// Which of one MLP's GEMMs run a small-GEMM kernel instead of cuBLASLt
// (model/gpu/tuned_small_gemms.h): the uses handed in, for uses with a prediction the
// decision per batch (the kernel's predicted time against the model's prediction for the
// cuBLASLt configuration of the same GEMM), and the weight-gradient kernels' workspace.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "gemm/cublaslt_gemm.h"
#include "model/gpu/tuned_small_gemms.h"

namespace hetrec::inline model::gpu_model {

class SmallGemmChoice {
 public:
  // Replaces the uses (and forgets the decisions taken); call reserve() again after.
  void set_uses(std::vector<SmallGemmUse> uses);

  // The kernel that runs `layer`'s `pass` at `batch`, or null: cuBLASLt, which would run
  // `problem` on `operands` (what the model prices for the comparison).
  const kernels::TunedSmallGemm* choose(int layer, tune::SmallGemmPass pass, int64_t batch, cublaslt::Gemm& gemm,
                                        const cublaslt::Problem& problem, const cublaslt::Operands& operands);

  // Every decision taken so far, named `prefix`.<layer> <pass>.
  std::vector<SmallGemmDecision> decisions(const std::string& prefix) const;

  // The largest workspace the uses' kernels need (the weight-gradient kernels' partial
  // sums), allocated now; workspace() is null when none needs one.
  void reserve(Allocator& device);
  float* workspace() const { return workspace_.defined() ? workspace_.data<float>() : nullptr; }

 private:
  std::vector<SmallGemmUse> uses_;
  // (use index, batch) -> the decision (uses with a prediction only).
  std::map<std::pair<std::size_t, int64_t>, SmallGemmDecision> decisions_;
  Tensor workspace_;
};

}  // namespace hetrec::model::gpu_model
