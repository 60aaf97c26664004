#include "gpu/device.h"

#include "core/error.h"
#include "gpu/check.h"
#include "gpu/platform.h"

namespace hetrec::gpu {

int device_count() {
  int n = 0;
  const cudaError_t status = cudaGetDeviceCount(&n);
  if (status == cudaErrorNoDevice || status == cudaErrorInsufficientDriver) {
    (void)cudaGetLastError();
    return 0;
  }
  if (status != cudaSuccess) {
    // Any other failure here (no driver library in a container, ...) also means "no
    // usable device"; there is nothing a caller could do differently.
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}

void set_device(int index) { HETREC_GPU_CHECK(cudaSetDevice(index)); }

int current_device() {
  int index = 0;
  HETREC_GPU_CHECK(cudaGetDevice(&index));
  return index;
}

void synchronize_device() { HETREC_GPU_CHECK(cudaDeviceSynchronize()); }

DeviceProperties device_properties(int index) {
  cudaDeviceProp p{};
  HETREC_GPU_CHECK(cudaGetDeviceProperties(&p, index));
  DeviceProperties d;
  d.name = p.name;
  d.index = index;
  d.compute_major = p.major;
  d.compute_minor = p.minor;
  d.multiprocessors = p.multiProcessorCount;
  d.warp_size = p.warpSize;
  d.global_memory_bytes = p.totalGlobalMem;
  d.l2_cache_bytes = static_cast<std::size_t>(p.l2CacheSize);
#if defined(HETREC_GPU_HIP) && HIP_VERSION_MAJOR < 6
  // HIP before 6.0 names these fields differently; AMD GPUs have no opt-in above the
  // per-block limit, so the opt-in maximum is the per-block size.
  d.shared_memory_per_block_optin = p.sharedMemPerBlock;
  d.shared_memory_per_multiprocessor = p.maxSharedMemoryPerMultiProcessor;
#else
  d.shared_memory_per_block_optin = p.sharedMemPerBlockOptin;
  d.shared_memory_per_multiprocessor = p.sharedMemPerMultiprocessor;
#endif
  d.max_threads_per_block = p.maxThreadsPerBlock;
  d.max_threads_per_multiprocessor = p.maxThreadsPerMultiProcessor;
  if (d.warp_size != kWarpSize)
    throw InternalError("device " + std::to_string(index) + " (" + d.name + ") has warp size " +
                        std::to_string(d.warp_size) + " but hetrec was compiled for " +
                        std::to_string(kWarpSize) + ": rebuild for this architecture");
  return d;
}

int multiprocessor_count(int index) {
  int n = 0;
  HETREC_GPU_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, index));
  return n;
}

MemoryInfo memory_info() {
  MemoryInfo m;
  HETREC_GPU_CHECK(cudaMemGetInfo(&m.free_bytes, &m.total_bytes));
  return m;
}

int driver_version() {
  int v = 0;
  HETREC_GPU_CHECK(cudaDriverGetVersion(&v));
  return v;
}

}  // namespace hetrec::gpu
