// tune/kernel_families.h: the one list of tunable kernel families that `hetrec tune` and
// the GPU model's loader both follow, built from the folders of src/tunable/ (each refuses a
// family the other lacks: tests/tune/test_tunable_registries.cpp on a CUDA build).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

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

TEST(KernelFamilies, TheFoldersInNameOrderOrderTheList) {
  // cross_net, dot_interaction, embedding_forward, small_gemm, sparse_update; a folder's
  // families in the order its add_<folder>_families gives them (forward, then backward).
  const std::vector<std::string> expected = {kCrossForwardKernel,     kCrossBackwardKernel, kDotForwardKernel,
                                             kDotBackwardKernel,      kEmbeddingForwardKernel, kSmallGemmKernel,
                                             kSparseUpdateKernel};
  std::vector<std::string> names;
  for (const KernelFamily& f : kernel_families()) names.push_back(f.kernel);
  EXPECT_EQ(names, expected);
  EXPECT_EQ(kernel_family_names(), "cross_forward, cross_backward, dot_interaction_forward, "
                                   "dot_interaction_backward, embedding_bag_forward, small_gemm, "
                                   "embedding_sparse_update");
}

TEST(KernelFamilies, TheBuildListsEveryFolderOfSrcTunable) {
  // The generated list the three registries expand (cmake/layer_headers.cmake) against the
  // folders on disk: a folder the build missed would register nothing.
  const std::vector<std::string> generated = {
#define HETREC_TUNABLE_FOLDER(folder) #folder,
#include "tunable/tunable_folders.def"
#undef HETREC_TUNABLE_FOLDER
  };
  std::vector<std::string> on_disk;
  for (const auto& e : std::filesystem::directory_iterator(std::string(HETREC_SOURCE_DIR) + "/src/tunable"))
    if (e.is_directory()) on_disk.push_back(e.path().filename().string());
  std::sort(on_disk.begin(), on_disk.end());
  EXPECT_EQ(generated, on_disk);
  EXPECT_GE(on_disk.size(), 5u);
}

}  // namespace
}  // namespace hetrec::tune
