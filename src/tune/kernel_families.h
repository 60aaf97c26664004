#pragma once
// The tunable kernel families: the one list that `hetrec tune` searches
// (tune/gpu/kernel_search.h, one adapter per family) and the GPU model loads winners for
// (model/gpu/tuned_kernels.h, one loader per family; the small GEMMs load through
// model/gpu/tuned_small_gemms.h).
//
// A family lives in one folder, src/tunable/<folder>/ (kernel, variant space, cost model,
// bench, adapter, loader; a folder may hold more than one family, as the dot interaction's
// forward and backward). The build lists the folders (tunable/tunable_folders.def,
// cmake/tunable_folders.cmake), and each layer's registry calls one function of each folder,
// defined in the folder's file of that layer:
//   <folder>_cost.cpp     add_<folder>_families(std::vector<KernelFamily>&)   this list
//   <folder>_tuning.cpp   add_<folder>_tuning(std::vector<TunableFamily>&)     the tuner's adapters
//   <folder>_loader.cpp   add_<folder>_loaders(std::vector<TunedKernelLoader>&) the GPU model's loaders
// so adding a tunable kernel is adding its folder. The adapters' and the loaders' registries
// refuse a family this list lacks and a family of this list they lack.
#include <algorithm>
#include <string>
#include <vector>

#include "core/error.h"

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

// A registry's entries (each with a `kernel` member naming its family) in the order of
// kernel_families(), each once. Throws InternalError naming `registry` (e.g. "tuning adapter")
// for a listed family with no entry or two, and for an entry whose family the list lacks.
template <class Entry>
std::vector<Entry> in_family_order(const std::vector<Entry>& entries, const std::string& registry) {
  std::vector<Entry> ordered;
  for (const KernelFamily& f : kernel_families()) {
    const auto matches = [&](const Entry& e) { return e.kernel == f.kernel; };
    const auto n = std::count_if(entries.begin(), entries.end(), matches);
    if (n != 1)
      throw InternalError("kernel family '" + f.kernel + "' (tune/kernel_families.h) has " +
                          (n == 0 ? "no " + registry : "two of its " + registry + "s"));
    ordered.push_back(*std::find_if(entries.begin(), entries.end(), matches));
  }
  for (const Entry& e : entries)
    if (std::none_of(ordered.begin(), ordered.end(), [&](const Entry& o) { return o.kernel == e.kernel; }))
      throw InternalError(registry + " '" + e.kernel +
                          "' names a kernel family that tune/kernel_families.h does not list");
  return ordered;
}

}  // namespace hetrec::tune
