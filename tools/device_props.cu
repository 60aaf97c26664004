// Prints the CUDA device properties that hw/*.toml cites as measured (SM count, warp size,
// L2 size, shared memory per SM, ...) as one JSON line, for a results file under
// bench/results/. Not part of the build:
//   nvcc -o /tmp/device_props tools/device_props.cu && /tmp/device_props
#include <cstdio>
#include <cuda_runtime.h>
int main() {
  cudaDeviceProp p;
  if (cudaGetDeviceProperties(&p, 0) != cudaSuccess) return 1;
  int drv = 0, rt = 0;
  cudaDriverGetVersion(&drv);
  cudaRuntimeGetVersion(&rt);
  std::printf("{\"name\": \"%s\", \"compute_capability\": \"%d.%d\", \"multiprocessors\": %d, \"warp_size\": %d, "
              "\"l2_cache_bytes\": %d, \"shared_memory_per_multiprocessor_bytes\": %zu, "
              "\"shared_memory_per_block_optin_bytes\": %zu, \"registers_per_multiprocessor\": %d, "
              "\"max_threads_per_multiprocessor\": %d, \"max_threads_per_block\": %d, \"global_memory_bytes\": %zu, "
              "\"memory_bus_width_bits\": %d, \"driver\": %d, \"runtime\": %d}\n",
              p.name, p.major, p.minor, p.multiProcessorCount, p.warpSize, p.l2CacheSize,
              p.sharedMemPerMultiprocessor, p.sharedMemPerBlockOptin, p.regsPerMultiprocessor,
              p.maxThreadsPerMultiProcessor, p.maxThreadsPerBlock, p.totalGlobalMem, p.memoryBusWidth, drv, rt);
  return 0;
}
