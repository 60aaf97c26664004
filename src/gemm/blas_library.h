#pragma once
// The CPU BLAS library hetrec was linked with, as it describes itself.
#include <string>

namespace hetrec::inline gemm::cpu_blas {

// OpenBLAS's build description, e.g. "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Haswell MAX_THREADS=64".
std::string library_text();

}  // namespace hetrec::gemm::cpu_blas
