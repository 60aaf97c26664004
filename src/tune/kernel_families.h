#pragma once
// The tunable kernel families: the one list that `hetrec tune` searches
// (tune/gpu/kernel_search.h, one adapter per family) and the GPU model loads winners for
// (model/gpu/tuned_kernels.h, one loader per family; the small GEMMs load through
// model/gpu/tuned_small_gemms.h). A family's kernel, variant space, cost model, bench,
// adapter and loader live in its folder, src/tunable/<family>/: adding a tunable kernel is
// adding that folder, its line here, and its adapter and loader to the two registries
// (tunable_families(), load_tuned_kernels); both refuse a family this list does not match.
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
