// tune/kernel_families.h: the one list of tunable kernel families that `hetrec tune` and
// the GPU model's loader both follow, built from the folders of src/tunable/ (each refuses a
// family the other lacks: tests/tune/test_tunable_registries.cpp on a CUDA build).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
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
  // The generated list the three registries expand (cmake/tunable_folders.cmake) against the
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

struct Entry {
  std::string kernel;
  int tag = 0;
};

TEST(KernelFamilies, ARegistryIsPutInTheListsOrderAndRefusedWhenItDoesNotMatch) {
  std::vector<Entry> entries;
  int tag = 0;
  for (auto it = kernel_families().rbegin(); it != kernel_families().rend(); ++it) entries.push_back({it->kernel, tag++});
  const std::vector<Entry> ordered = in_family_order(entries, "loader");
  ASSERT_EQ(ordered.size(), kernel_families().size());
  for (std::size_t i = 0; i < ordered.size(); ++i) {
    EXPECT_EQ(ordered[i].kernel, kernel_families()[i].kernel);
    EXPECT_EQ(ordered[i].tag, static_cast<int>(ordered.size() - 1 - i));  // the entry itself, not a copy of another
  }
  const auto error_of = [](const std::vector<Entry>& e) {
    try {
      (void)in_family_order(e, "loader");
    } catch (const InternalError& x) {
      return std::string(x.what());
    }
    return std::string();
  };
  std::vector<Entry> missing(entries.begin() + 1, entries.end());
  EXPECT_NE(error_of(missing).find("'" + entries.front().kernel + "' (tune/kernel_families.h) has no loader"),
            std::string::npos) << error_of(missing);
  std::vector<Entry> twice = entries;
  twice.push_back(entries.back());
  EXPECT_NE(error_of(twice).find("has two of its loaders"), std::string::npos) << error_of(twice);
  std::vector<Entry> unknown = entries;
  unknown.push_back({"no_such_kernel", 99});
  EXPECT_NE(error_of(unknown).find("loader 'no_such_kernel' names a kernel family"), std::string::npos)
      << error_of(unknown);
}

}  // namespace
}  // namespace hetrec::tune
