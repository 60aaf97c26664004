#pragma once
// A caching device allocator: freed blocks go to per-size-class free lists and are
// handed out again, so a training loop that allocates the same shapes every step talks
// to the driver only during its first step. Memory goes back to the driver only in
// release_cached(), the destructor, or as a last resort when the driver reports out of
// memory (the cache is dropped and the allocation retried once).
//
// Reuse is safe for work ordered on one stream (a block freed by a kernel's owner is
// only handed to later work on that stream). Work on another stream that still uses a
// freed block must be synchronised by the caller first.
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "core/tensor.h"

namespace hetrec::gpu {

struct AllocatorStats {
  std::size_t bytes_in_use = 0;       // handed out and not yet returned (size-class rounded)
  std::size_t peak_bytes_in_use = 0;
  std::size_t bytes_cached = 0;       // held in free lists, ready for reuse
  std::size_t bytes_reserved = 0;     // obtained from the driver: in use + cached
  int64_t driver_allocations = 0;     // cudaMalloc calls made
  int64_t cache_hits = 0;             // allocations served from a free list
};

class CachingDeviceAllocator final : public Allocator {
 public:
  explicit CachingDeviceAllocator(int device_index = 0);
  ~CachingDeviceAllocator() override;
  CachingDeviceAllocator(const CachingDeviceAllocator&) = delete;
  CachingDeviceAllocator& operator=(const CachingDeviceAllocator&) = delete;

  void* allocate(std::size_t bytes) override;
  void deallocate(void* ptr, std::size_t bytes) override;
  Device device() const override { return Device{DeviceKind::gpu, device_index_}; }

  AllocatorStats stats() const;
  // Returns every cached (free) block to the driver. Call outside the training loop.
  void release_cached();

  // The size class a request of `bytes` is served from: multiples of 512 bytes up to
  // 1 MiB, four classes per power of two up to 256 MiB (at most 25% rounding waste),
  // multiples of 2 MiB above.
  static std::size_t size_class(std::size_t bytes);

 private:
  void release_cached_locked();
  int device_index_;
  mutable std::mutex mutex_;
  std::unordered_map<std::size_t, std::vector<void*>> free_blocks_;  // by size class
  std::unordered_map<void*, std::size_t> live_blocks_;               // pointer -> size class
  AllocatorStats stats_;
};

}  // namespace hetrec::gpu
