#pragma once
// The tunable kernel families: the one list that `hetrec tune` searches
// (tune/gpu/kernel_search.h, one adapter per family) and the GPU model loads winners for
// (model/gpu/tuned_kernels.h, one loader per family; the small GEMMs load through
// model/gpu/tuned_small_gemms.h).
//
// A family lives in one folder, src/tunable/<folder>/ (kernel, variant space, cost model,
// bench, adapter, loader; a folder may hold more than one family, as the dot interaction's
// forward and backward). The build lists the folders (tunable/tunable_folders.def,
// cmake/layer_headers.cmake), and each layer's registry calls one function of each folder,
// defined in the folder's file of that layer:
//   <folder>_cost.cpp     add_<folder>_families(std::vector<KernelFamily>&)   this list
//   <folder>_tuning.cpp   add_<folder>_tuning(std::vector<TunableFamily>&)     the tuner's adapters
//   <folder>_loader.cpp   add_<folder>_loaders(std::vector<TunedKernelLoader>&) the GPU model's loaders
// so adding a tunable kernel is adding its folder. The adapters' and the loaders' registries
// refuse a family this list lacks and a family of this list they lack.
#include <string>
#include <vector>

namespace hetrec::tune {

struct KernelFamily {
  std::string kernel;  // as --kernel and the winners file name it
  std::string label;   // as the GPU model's description names it
};

// The folders' families in the folders' name order, and within a folder in the order its
// add_<folder>_families gives them: the order `--kernel all` tunes them and the GPU model
// loads them. Throws InternalError when two families share a kernel name or a label.
const std::vector<KernelFamily>& kernel_families();

// The kernel names of kernel_families(), in its order, ", "-separated (for messages).
std::string kernel_family_names();

}  // namespace hetrec::tune
