#pragma once
// The versions of the device libraries a GPU build uses, for `hetrec --version`.
#include <string>
#include <utility>
#include <vector>

namespace hetrec::gpu {

// (what, version) pairs: the runtime the program loaded and the toolkit it was compiled
// with, the driver ("none" without one), the BLAS-Lt library and the collectives library
// ("none" when not linked). Never throws: a query that fails reads "unavailable".
std::vector<std::pair<std::string, std::string>> library_versions();

}  // namespace hetrec::gpu
