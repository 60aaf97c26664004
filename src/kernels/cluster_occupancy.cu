#include "kernels/cluster_occupancy.h"

#include <algorithm>
#include <cstddef>

#include "gpu/device.h"
#include "gpu/kernel_attributes.h"
#include "gpu/platform.h"

namespace hetrec::kernels {

#if defined(HETREC_GPU_HIP)

std::vector<ClusterUnits> measure_cluster_units(int) { return {}; }  // no thread-block clusters

#else

namespace {

constexpr int kProbeThreads = 128;
constexpr int kLargestClusterSize = 16;         // non-portable limit on sm_90 and sm_100
constexpr int kLargestPortableClusterSize = 8;  // CUDA C++ Programming Guide
constexpr std::size_t kReservedSharedPerBlock = 1024;  // CUDA C++ Programming Guide, compute capability 9.0
constexpr std::size_t kSharedMargin = 1024;
constexpr int kFirstClusterArch = 9;  // thread-block clusters from sm_90 on

// Never run: only its resource use (threads, dynamic shared memory) is queried.
__global__ void cluster_probe_kernel(int* out) {
  extern __shared__ int scratch[];
  scratch[threadIdx.x] = threadIdx.x;
  __syncthreads();
  if (out != nullptr) out[blockIdx.x] = scratch[kProbeThreads - 1 - threadIdx.x];
}

}  // namespace

std::vector<ClusterUnits> measure_cluster_units(int device_index) {
  gpu::set_device(device_index);
  const gpu::DeviceProperties device = gpu::device_properties(device_index);
  if (device.compute_major < kFirstClusterArch) return {};
  const void* kernel = reinterpret_cast<const void*>(&cluster_probe_kernel);
  gpu::allow_dynamic_shared_memory(kernel, device.shared_memory_per_block_optin);
  const int largest = gpu::allow_non_portable_clusters(kernel) ? kLargestClusterSize : kLargestPortableClusterSize;

  std::vector<ClusterUnits> out;
  for (int ctas_per_unit : {1, 2}) {
    // Shared memory sized so that exactly `ctas_per_unit` CTAs fit on one SM: its share of
    // the SM less the 1 KB the driver reserves per block and 1 KB of margin.
    const std::size_t shared =
        std::min(device.shared_memory_per_block_optin,
                 device.shared_memory_per_multiprocessor / ctas_per_unit - kReservedSharedPerBlock - kSharedMargin);
    for (int size = 2; size <= largest; size *= 2)
      out.push_back(ClusterUnits{size, ctas_per_unit, gpu::max_active_clusters(kernel, kProbeThreads, shared, size)});
  }
  return out;
}

#endif

}  // namespace hetrec::kernels
