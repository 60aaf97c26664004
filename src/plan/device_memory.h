#pragma once
// Facts about device memory that are not the model's: how much of a GPU's HBM a process
// can use, what the runtime takes before the first allocation, and how the caching
// allocator (gpu/caching_allocator.h) rounds each request.
#include <cstddef>
#include <cstdint>

#include "hw/hardware.h"

namespace hetrec::inline plan {

inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
inline constexpr double kMiB = 1024.0 * 1024.0;

// The hardware files give HBM in the datasheets' "GB", which for these parts are binary
// gigabytes: the H100 SXM's 80 GB are five 16 GiB HBM3 stacks; nvidia-smi reports an H200
// SXM of 141 GB as 143771 MiB.
inline constexpr double kHbmUnitBytes = kGiB;
// What the runtime offers a process below hbm_gb GiB: on an H200 SXM (driver 580.159,
// CUDA 13) cudaMemGetInfo reports a total of 143155 MiB, 1229 MiB below 141 GiB (and 616
// MiB below nvidia-smi's total). Measured on the H200 only; taken for every GPU.
inline constexpr double kDriverReservedBytes = 1229.0 * kMiB;
// Device memory in use once a context exists and cuBLASLt has run fp32 and TF32 GEMMs
// (lazy module loading, the CUDA 13 default): 528 MiB measured with cudaMemGetInfo on the
// same H200 (526 MiB for the bare context). hetrec's own kernel modules, loaded lazily
// too, are not included. Other GPUs and ROCm are assumed alike until measured.
inline constexpr double kRuntimeContextBytes = 528.0 * kMiB;

// Bytes of device memory a process can allocate on `hw`: hbm_gb GiB less what the driver
// keeps (the runtime context is counted as a consumer by the memory model).
double usable_device_bytes(const Hardware& hw);

// The size class gpu::CachingDeviceAllocator serves a request of `bytes` from: the
// allocator's own function (gpu/allocator_size_class.h).
std::size_t caching_allocator_size_class(std::size_t bytes);

}  // namespace hetrec::plan::plan
