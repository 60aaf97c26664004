#pragma once
// Which of one MLP's GEMMs run a small-GEMM kernel instead of cuBLASLt
// (model/gpu/tuned_small_gemms.h): the uses handed in, for uses with a prediction the
// decision per batch, and the weight-gradient kernels' workspace. A decision compares the
// kernel's predicted time with the model's prediction for the cuBLASLt configuration of the
// same GEMM; where the GEMM selection times its candidates (cublaslt::Gemm::times_candidates),
// it times both on the operands at hand, once, and the kernel runs only if it measured at
// least kShortlistMargin faster (gemm_perf/gemm_ranker.h's shortlist_winner, cuBLASLt as
// the incumbent): a prediction a few percent off would otherwise cost a step the library's
// choice does not.
#include <cstddef>
#include <cstdint>
#include <functional>
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

  // The GEMM both ways, on the stream it runs on, for timing them against each other:
  // `small` launches the given kernel, `cublaslt` runs the library's GEMM. Each writes only
  // what the GEMM itself then writes.
  struct Launches {
    gpu::stream_t stream = nullptr;
    std::function<void(const kernels::TunedSmallGemm&)> small;
    std::function<void()> cublaslt;
  };

  // The kernel that runs `layer`'s `pass` at `batch`, or null: cuBLASLt, which would run
  // `problem` on `operands` (what the model prices for the comparison). While the stream is
  // being captured, a decision to be timed follows the prediction and is timed at a later
  // call.
  const kernels::TunedSmallGemm* choose(int layer, tune::SmallGemmPass pass, int64_t batch, cublaslt::Gemm& gemm,
                                        const cublaslt::Problem& problem, const cublaslt::Operands& operands,
                                        const Launches& launches);

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
