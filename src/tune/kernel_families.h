#pragma once
// The tunable kernel families: the one list that `hetrec tune` searches
// (tune/gpu/kernel_search.h, one adapter per family) and the GPU model loads winners for
// (model/gpu/tuned_kernels.h, one loader per family; the small GEMMs load through
// model/gpu/tuned_small_gemms.h). Adding a tunable kernel is adding it here, its adapter
// and its loader; both sides refuse a family the other lacks.
#include <string>
#include <vector>

namespace hetrec::tune {

struct KernelFamily {
  std::string kernel;  // as --kernel and the winners file name it
  std::string label;   // as the GPU model's description names it
};

// In the order `--kernel all` tunes them and the GPU model loads them.
const std::vector<KernelFamily>& kernel_families();

}  // namespace hetrec::tune
