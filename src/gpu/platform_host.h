#pragma once
// Runtime spellings that only host code uses, mapped to HIP as gpu/platform.h maps the
// rest. They live apart because platform.h's text is part of the runtime-compiled
// kernels' sources (kernels/CMakeLists.txt): a name added there would change their hash
// and mark every tuned kernel stale (docs/tuning.md).
#include "gpu/platform.h"

#if defined(HETREC_GPU_HIP)
#define cudaDeviceGetStreamPriorityRange hipDeviceGetStreamPriorityRange
#define cudaStreamCreateWithPriority hipStreamCreateWithPriority
#endif
