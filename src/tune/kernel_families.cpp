#include "tune/kernel_families.h"

#include <set>

#include "core/error.h"

namespace hetrec::tune {

// Each folder's part of the list, defined in its <folder>_cost.cpp.
#define HETREC_TUNABLE_FOLDER(folder) void add_##folder##_families(std::vector<KernelFamily>& out);
#include "tunable/tunable_folders.def"
#undef HETREC_TUNABLE_FOLDER

const std::vector<KernelFamily>& kernel_families() {
  static const std::vector<KernelFamily> families = [] {
    std::vector<KernelFamily> out;
#define HETREC_TUNABLE_FOLDER(folder) add_##folder##_families(out);
#include "tunable/tunable_folders.def"
#undef HETREC_TUNABLE_FOLDER
    std::set<std::string> kernels, labels;
    for (const KernelFamily& f : out) {
      if (f.kernel.empty() || f.label.empty())
        throw InternalError("tunable kernel families: a family has no kernel name or no label");
      if (!kernels.insert(f.kernel).second)
        throw InternalError("tunable kernel families: kernel '" + f.kernel + "' is registered twice");
      if (!labels.insert(f.label).second)
        throw InternalError("tunable kernel families: label '" + f.label + "' names two families");
    }
    return out;
  }();
  return families;
}

std::string kernel_family_names() {
  std::string names;
  for (const KernelFamily& f : kernel_families()) names += (names.empty() ? "" : ", ") + f.kernel;
  return names;
}

}  // namespace hetrec::tune
