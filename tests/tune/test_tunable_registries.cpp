// The two registries built from the tunable folders (tune/kernel_families.h): the tuner's
// adapters (tune/gpu/kernel_search.h) and the GPU model's loaders (model/gpu/tuned_kernels.h)
// each hold every family of the one list, once, in its order. No device is needed.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model/gpu/tuned_kernels.h"
#include "tune/gpu/kernel_search.h"
#include "tune/kernel_families.h"

namespace hetrec {
namespace {

std::vector<std::string> listed() {
  std::vector<std::string> names;
  for (const tune::KernelFamily& f : tune::kernel_families()) names.push_back(f.kernel);
  return names;
}

TEST(TunableRegistries, TheTunerHasOneAdapterPerFamilyInTheListsOrder) {
  std::vector<std::string> names;
  for (const tune::TunableFamily& f : tune::tunable_families()) {
    names.push_back(f.kernel);
    EXPECT_TRUE(static_cast<bool>(f.jobs)) << f.kernel << " has no jobs function";
  }
  EXPECT_EQ(names, listed());
}

TEST(TunableRegistries, TheGpuModelHasOneLoaderPerFamilyInTheListsOrder) {
  std::vector<std::string> names;
  for (const model::gpu_model::TunedKernelLoader& l : model::gpu_model::tuned_kernel_loaders()) {
    names.push_back(l.kernel);
    EXPECT_TRUE(static_cast<bool>(l.load)) << l.kernel << " has no load function";
  }
  EXPECT_EQ(names, listed());
}

}  // namespace
}  // namespace hetrec
