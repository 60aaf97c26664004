#include "gemm/blas_library.h"

#include <cblas.h>

namespace hetrec::inline gemm::cpu_blas {

std::string library_text() {
  const char* config = openblas_get_config();
  std::string text = config ? config : "OpenBLAS (no configuration text)";
  while (!text.empty() && (text.back() == ' ' || text.back() == '\n')) text.pop_back();
  return text;
}

}  // namespace hetrec::gemm::cpu_blas
