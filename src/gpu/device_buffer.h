#pragma once
// Owning RAII buffers: DeviceBuffer (device memory straight from the driver, for
// long-lived storage), PinnedBuffer (page-locked host memory for async copies) and
// MappedHostBuffer (page-locked host memory the device reads and writes in place).
// Move-only. Short-lived or per-step storage should come from CachingDeviceAllocator.
#include <cstddef>
#include <utility>

#include "gpu/memory.h"

namespace hetrec::gpu {

template <void* (*Alloc)(std::size_t), void (*Free)(void*) noexcept>
class OwnedBytes {
 public:
  OwnedBytes() = default;
  explicit OwnedBytes(std::size_t bytes) : ptr_(Alloc(bytes)), bytes_(bytes) {}
  ~OwnedBytes() { Free(ptr_); }
  OwnedBytes(OwnedBytes&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  OwnedBytes& operator=(OwnedBytes&& o) noexcept {
    if (this != &o) {
      Free(ptr_);
      ptr_ = std::exchange(o.ptr_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  OwnedBytes(const OwnedBytes&) = delete;
  OwnedBytes& operator=(const OwnedBytes&) = delete;

  void* get() const { return ptr_; }
  template <class T>
  T* as() const { return static_cast<T*>(ptr_); }
  std::size_t bytes() const { return bytes_; }
  bool empty() const { return ptr_ == nullptr; }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

using DeviceBuffer = OwnedBytes<&device_malloc, &device_free>;
using PinnedBuffer = OwnedBytes<&pinned_malloc, &pinned_free>;
// Page-locked host memory mapped for the device: kernels use device_alias().
class MappedHostBuffer {
 public:
  MappedHostBuffer() = default;
  explicit MappedHostBuffer(std::size_t bytes) : host_(bytes), alias_(mapped_device_alias(host_.get())) {}
  void* host() const { return host_.get(); }
  void* device_alias() const { return alias_; }
  std::size_t bytes() const { return host_.bytes(); }
  bool empty() const { return host_.empty(); }

 private:
  OwnedBytes<&mapped_host_malloc, &pinned_free> host_;
  void* alias_ = nullptr;
};

}  // namespace hetrec::gpu
