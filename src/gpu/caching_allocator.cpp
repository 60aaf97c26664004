#include "gpu/caching_allocator.h"

#include "core/error.h"
#include "gpu/allocator_size_class.h"
#include "gpu/memory.h"

namespace hetrec::gpu {

std::size_t CachingDeviceAllocator::size_class(std::size_t bytes) { return allocator_size_class(bytes); }

CachingDeviceAllocator::CachingDeviceAllocator(int device_index) : device_index_(device_index) {}

CachingDeviceAllocator::~CachingDeviceAllocator() {
  std::lock_guard lock(mutex_);
  release_cached_locked();
  // Blocks still live belong to tensors that outlive the allocator: a programming error,
  // but freeing them here would turn it into a use-after-free on the device.
}

void* CachingDeviceAllocator::allocate(std::size_t bytes) {
  const std::size_t cls = size_class(bytes);
  std::lock_guard lock(mutex_);
  void* p = nullptr;
  auto it = free_blocks_.find(cls);
  if (it != free_blocks_.end() && !it->second.empty()) {
    p = it->second.back();
    it->second.pop_back();
    stats_.bytes_cached -= cls;
    ++stats_.cache_hits;
  } else {
    try {
      p = device_malloc(cls);
    } catch (const OutOfMemoryError&) {
      if (stats_.bytes_cached == 0) throw;
      release_cached_locked();
      p = device_malloc(cls);  // throws OutOfMemoryError with the free amount if still short
    }
    ++stats_.driver_allocations;
    stats_.bytes_reserved += cls;
  }
  live_blocks_.emplace(p, cls);
  stats_.bytes_in_use += cls;
  if (stats_.bytes_in_use > stats_.peak_bytes_in_use) stats_.peak_bytes_in_use = stats_.bytes_in_use;
  return p;
}

void CachingDeviceAllocator::deallocate(void* ptr, std::size_t /*bytes*/) {
  if (!ptr) return;
  std::lock_guard lock(mutex_);
  auto it = live_blocks_.find(ptr);
  if (it == live_blocks_.end())
    throw InternalError("CachingDeviceAllocator::deallocate: pointer was not allocated here");
  const std::size_t cls = it->second;
  live_blocks_.erase(it);
  free_blocks_[cls].push_back(ptr);
  stats_.bytes_in_use -= cls;
  stats_.bytes_cached += cls;
}

AllocatorStats CachingDeviceAllocator::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

void CachingDeviceAllocator::release_cached() {
  std::lock_guard lock(mutex_);
  release_cached_locked();
}

void CachingDeviceAllocator::release_cached_locked() {
  for (auto& [cls, blocks] : free_blocks_) {
    for (void* p : blocks) {
      device_free(p);
      stats_.bytes_reserved -= cls;
      stats_.bytes_cached -= cls;
    }
    blocks.clear();
  }
}

}  // namespace hetrec::gpu
