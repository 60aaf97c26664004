#include "tune/kernel_families.h"

#include "tune/cross_net_cost.h"
#include "tune/dot_backward_cost.h"
#include "tune/dot_interaction_cost.h"
#include "tune/embedding_forward_cost.h"
#include "tune/small_gemm_cost.h"
#include "tune/sparse_update_cost.h"

namespace hetrec::tune {

const std::vector<KernelFamily>& kernel_families() {
  static const std::vector<KernelFamily> families = {
      {kEmbeddingForwardKernel, "embedding forward"},
      {kDotForwardKernel, "dot interaction"},
      {kSparseUpdateKernel, "embedding sparse update"},
      {kDotBackwardKernel, "dot interaction backward"},
      {kCrossForwardKernel, "cross forward"},
      {kCrossBackwardKernel, "cross backward"},
      {kSmallGemmKernel, "small GEMM"},
  };
  return families;
}

}  // namespace hetrec::tune
