#include "gpu/blaslt.h"

#include "core/error.h"

namespace hetrec::gpu {

std::string blas_status_text(cublasStatus_t status) {
#if defined(HETREC_GPU_HIP)
  return hipblasStatusToString(status);
#else
  return std::string(cublasLtGetStatusName(status)) + " (" + cublasLtGetStatusString(status) + ")";
#endif
}

std::string blas_lt_library_text() {
#if defined(HETREC_GPU_HIP)
  return "hipblaslt";
#else
  return "cublaslt " + std::to_string(cublasLtGetVersion());
#endif
}

void blas_check(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw DeviceError(std::string(file) + ":" + std::to_string(line) + ": BLAS-Lt call " + call +
                    " failed: " + blas_status_text(status));
}

}  // namespace hetrec::gpu
