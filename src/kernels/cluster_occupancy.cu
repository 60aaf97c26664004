#include "kernels/cluster_occupancy.h"

#include <algorithm>

#include "gpu/check.h"
#include "gpu/platform.h"

namespace hetrec::kernels {

#if defined(HETREC_GPU_HIP)

std::vector<ClusterUnits> measure_cluster_units(int) { return {}; }

#else

namespace {

constexpr int kProbeThreads = 128;
constexpr int kLargestClusterSize = 16;  // non-portable limit on sm_90 and sm_100
constexpr int kLargestPortableClusterSize = 8;  // CUDA C++ Programming Guide
constexpr int kReservedSharedPerBlock = 1024;   // CUDA C++ Programming Guide, compute capability 9.0
constexpr int kSharedMargin = 1024;

// Never run: only its resource use (threads, dynamic shared memory) is queried.
__global__ void cluster_probe_kernel(int* out) {
  extern __shared__ int scratch[];
  scratch[threadIdx.x] = threadIdx.x;
  __syncthreads();
  if (out != nullptr) out[blockIdx.x] = scratch[kProbeThreads - 1 - threadIdx.x];
}

}  // namespace

std::vector<ClusterUnits> measure_cluster_units(int device_index) {
  HETREC_GPU_CHECK(cudaSetDevice(device_index));
  int major = 0, shared_per_sm = 0, shared_per_block_optin = 0;
  HETREC_GPU_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device_index));
  if (major < 9) return {};
  HETREC_GPU_CHECK(
      cudaDeviceGetAttribute(&shared_per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device_index));
  HETREC_GPU_CHECK(
      cudaDeviceGetAttribute(&shared_per_block_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device_index));
  const void* kernel = reinterpret_cast<const void*>(&cluster_probe_kernel);
  HETREC_GPU_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, shared_per_block_optin));
  const bool non_portable =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) == cudaSuccess;
  (void)cudaGetLastError();  // a refusal above is an answer, not an error
  const int largest = non_portable ? kLargestClusterSize : kLargestPortableClusterSize;

  std::vector<ClusterUnits> out;
  for (int ctas_per_unit : {1, 2}) {
    // Shared memory sized so that exactly `ctas_per_unit` CTAs fit on one SM: its share of
    // the SM less the 1 KB the driver reserves per block and 1 KB of margin.
    const int shared =
        std::min(shared_per_block_optin, shared_per_sm / ctas_per_unit - kReservedSharedPerBlock - kSharedMargin);
    for (int size = 2; size <= largest; size *= 2) {
      cudaLaunchConfig_t config = {};
      config.gridDim = dim3(size * 64);
      config.blockDim = dim3(kProbeThreads);
      config.dynamicSmemBytes = static_cast<std::size_t>(shared);
      cudaLaunchAttribute attribute;
      attribute.id = cudaLaunchAttributeClusterDimension;
      attribute.val.clusterDim.x = size;
      attribute.val.clusterDim.y = 1;
      attribute.val.clusterDim.z = 1;
      config.attrs = &attribute;
      config.numAttrs = 1;
      int clusters = 0;
      HETREC_GPU_CHECK(cudaOccupancyMaxActiveClusters(&clusters, kernel, &config));
      out.push_back(ClusterUnits{size, ctas_per_unit, clusters});
    }
  }
  return out;
}

#endif

}  // namespace hetrec::kernels
