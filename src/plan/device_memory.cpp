#include "plan/device_memory.h"

#include "gpu/allocator_size_class.h"

namespace hetrec::inline plan {

double usable_device_bytes(const Hardware& hw) { return hw.hbm_gb * kHbmUnitBytes - kDriverReservedBytes; }

std::size_t caching_allocator_size_class(std::size_t bytes) { return gpu::allocator_size_class(bytes); }

}  // namespace hetrec::plan::plan
