// tune/kernel_families.h: the one list of tunable kernel families that `hetrec tune` and
// the GPU model's loader both follow (each refuses a family the other lacks; on a CUDA
// build CliTune.UnknownKernelIsAConfigErrorNamingTheOption lists them through the tuner).
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "tunable/cross_net/cross_net_cost.h"
#include "tunable/dot_interaction/dot_backward_cost.h"
#include "tunable/dot_interaction/dot_interaction_cost.h"
#include "tunable/embedding_forward/embedding_forward_cost.h"
#include "tune/kernel_families.h"
#include "tunable/small_gemm/small_gemm_cost.h"
#include "tunable/sparse_update/sparse_update_cost.h"

namespace hetrec::tune {
namespace {

TEST(KernelFamilies, EveryWinnersKernelNameOnceWithALabel) {
  const std::set<std::string> expected = {kEmbeddingForwardKernel, kDotForwardKernel,   kSparseUpdateKernel,
                                          kDotBackwardKernel,      kCrossForwardKernel, kCrossBackwardKernel,
                                          kSmallGemmKernel};
  std::set<std::string> names, labels;
  for (const KernelFamily& f : kernel_families()) {
    EXPECT_TRUE(names.insert(f.kernel).second) << f.kernel << " listed twice";
    EXPECT_FALSE(f.label.empty()) << f.kernel;
    EXPECT_TRUE(labels.insert(f.label).second) << f.label << " labels two families";
  }
  EXPECT_EQ(names, expected);
}

TEST(KernelFamilies, TheEmbeddingForwardComesFirst) {
  // `--kernel all` tunes, and the GPU model's description lists, the families in this order.
  ASSERT_FALSE(kernel_families().empty());
  EXPECT_EQ(kernel_families().front().kernel, kEmbeddingForwardKernel);
  EXPECT_EQ(kernel_families().back().kernel, kSmallGemmKernel);
}

}  // namespace
}  // namespace hetrec::tune
