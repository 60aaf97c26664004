#include "gpu/check.h"

#include "core/error.h"

namespace hetrec::gpu {

std::string error_text(cudaError_t status) {
  return std::string(cudaGetErrorName(status)) + " (" + cudaGetErrorString(status) + ")";
}

void check(cudaError_t status, const char* call, const char* file, int line) {
  if (status == cudaSuccess) return;
  // Clear the sticky last-error slot for non-fatal errors so later checks are not
  // blamed for this one.
  (void)cudaGetLastError();
  throw DeviceError(std::string(file) + ":" + std::to_string(line) + ": device call " + call +
                    " failed: " + error_text(status));
}

void check_launch(const char* kernel, const char* file, int line) {
  const cudaError_t status = cudaGetLastError();
  if (status == cudaSuccess) return;
  throw DeviceError(std::string(file) + ":" + std::to_string(line) + ": launch of kernel " +
                    kernel + " failed: " + error_text(status));
}

}  // namespace hetrec::gpu
