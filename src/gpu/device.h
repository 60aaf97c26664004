#pragma once
// Device discovery and properties.
#include <cstddef>
#include <cstdint>
#include <string>

namespace hetrec::gpu {

// Number of visible devices; 0 when there is no device or no usable driver (never throws
// for those two cases, so tests can skip cleanly on machines without a GPU).
int device_count();
inline bool has_device() { return device_count() > 0; }

void set_device(int index);
int current_device();
// Blocks until all work on the current device has finished.
void synchronize_device();

struct DeviceProperties {
  std::string name;                  // as the driver reports it, e.g. "NVIDIA H200"
  int index = 0;
  int compute_major = 0;             // compute capability (CUDA) or gfx major (HIP)
  int compute_minor = 0;
  int multiprocessors = 0;           // SMs (NVIDIA) or CUs (AMD)
  int warp_size = 0;                 // as reported at run time; must equal kWarpSize
  std::size_t global_memory_bytes = 0;
  std::size_t l2_cache_bytes = 0;
  std::size_t shared_memory_per_block_optin = 0;  // the most a block may request
  std::size_t shared_memory_per_multiprocessor = 0;
  int max_threads_per_block = 0;
  int max_threads_per_multiprocessor = 0;
};

// Throws DeviceError if the device does not exist, and InternalError if its warp width
// differs from the compile-time kWarpSize (the build targets another architecture).
DeviceProperties device_properties(int index);

// Multiprocessor count of a device (one cheap attribute query; no caching), used to size
// persistent grids.
int multiprocessor_count(int index);

// The driver's version as it reports it (CUDA: 1000 x major + 10 x minor, e.g. 13000).
int driver_version();

struct MemoryInfo {
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
};
MemoryInfo memory_info();  // of the current device

}  // namespace hetrec::gpu
