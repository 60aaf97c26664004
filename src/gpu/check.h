#pragma once
// Return-code checks for every device runtime call. A failure throws DeviceError naming
// the call as written, the source file and line, and the runtime's own error name.
#include <string>

#include "gpu/platform.h"

namespace hetrec::gpu {

// Throws DeviceError unless `status` is success. `call` is the call's source text.
void check(cudaError_t status, const char* call, const char* file, int line);

// After a kernel launch: throws DeviceError naming the kernel if the launch failed
// (bad configuration, too much shared memory, no kernel image for this device).
void check_launch(const char* kernel, const char* file, int line);

// "cudaErrorMemoryAllocation (out of memory)": the runtime's name and description.
std::string error_text(cudaError_t status);

}  // namespace hetrec::gpu

#define HETREC_GPU_CHECK(call) ::hetrec::gpu::check((call), #call, __FILE__, __LINE__)
#define HETREC_GPU_CHECK_LAUNCH(kernel) ::hetrec::gpu::check_launch(kernel, __FILE__, __LINE__)
