#include "gpu/kernel_attributes.h"

#include "gpu/check.h"

namespace hetrec::gpu {

void allow_dynamic_shared_memory(const void* kernel, std::size_t bytes) {
  HETREC_GPU_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
}

}  // namespace hetrec::gpu
