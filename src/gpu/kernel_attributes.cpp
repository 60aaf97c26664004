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

#if defined(HETREC_GPU_HIP)

bool allow_non_portable_clusters(const void*) { return false; }

int max_active_clusters(const void*, int, std::size_t, int) { return 0; }

#else

bool allow_non_portable_clusters(const void* kernel) {
  const bool allowed = cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) == cudaSuccess;
  (void)cudaGetLastError();  // a refusal is an answer, not an error
  return allowed;
}

int max_active_clusters(const void* kernel, int threads, std::size_t dynamic_shared_bytes, int cluster_size) {
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(static_cast<unsigned>(cluster_size));
  config.blockDim = dim3(static_cast<unsigned>(threads));
  config.dynamicSmemBytes = dynamic_shared_bytes;
  cudaLaunchAttribute attribute = {};
  attribute.id = cudaLaunchAttributeClusterDimension;
  attribute.val.clusterDim.x = static_cast<unsigned>(cluster_size);
  attribute.val.clusterDim.y = 1;
  attribute.val.clusterDim.z = 1;
  config.attrs = &attribute;
  config.numAttrs = 1;
  int clusters = 0;
  HETREC_GPU_CHECK(cudaOccupancyMaxActiveClusters(&clusters, kernel, &config));
  return clusters;
}

#endif

}  // namespace hetrec::gpu
