#include "tune/kernel_families.h"

#include "tunable/cross_net/cross_net_cost.h"
#include "tunable/dot_interaction/dot_backward_cost.h"
#include "tunable/dot_interaction/dot_interaction_cost.h"
#include "tunable/embedding_forward/embedding_forward_cost.h"
#include "tunable/small_gemm/small_gemm_cost.h"
#include "tunable/sparse_update/sparse_update_cost.h"

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
