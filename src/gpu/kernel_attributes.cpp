#include "gpu/kernel_attributes.h"

#include "gpu/check.h"

namespace hetrec::gpu {

void allow_dynamic_shared_memory(const void* kernel, std::size_t bytes) {
  HETREC_GPU_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
}

int resident_blocks_per_multiprocessor(const void* kernel, int threads, std::size_t dynamic_shared_bytes) {
  int blocks = 0;
  HETREC_GPU_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, threads, dynamic_shared_bytes));
  return blocks;
}

}  // namespace hetrec::gpu
