#pragma once
// A small strided tensor: shape, strides (in elements), dtype, device, and shared
// ownership of its storage. Storage comes from an Allocator value, so the same type
// holds host buffers and device buffers (the gpu/ layer provides a device allocator).
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"

namespace hetrec {

enum class DeviceKind : uint8_t { cpu, gpu };

struct Device {
  DeviceKind kind = DeviceKind::cpu;
  int index = 0;
  bool operator==(const Device&) const = default;
  std::string str() const;
};

// Where tensor storage comes from. Implementations: HostAllocator (aligned host
// memory) here; the GPU caching allocator in gpu/.
class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void deallocate(void* ptr, std::size_t bytes) = 0;
  virtual Device device() const = 0;
};

// 64-byte aligned host memory; throws OutOfMemoryError naming the size on failure.
class HostAllocator final : public Allocator {
 public:
  void* allocate(std::size_t bytes) override;
  void deallocate(void* ptr, std::size_t bytes) override;
  Device device() const override { return Device{}; }
  static HostAllocator& instance();  // stateless, so one shared instance is harmless
};

class Tensor {
 public:
  Tensor() = default;
  // Contiguous, uninitialised tensor.
  static Tensor empty(std::vector<int64_t> shape, DType dtype, Allocator& alloc = HostAllocator::instance());
  // Contiguous tensor filled with zeros (host only).
  static Tensor zeros(std::vector<int64_t> shape, DType dtype);

  const std::vector<int64_t>& shape() const { return shape_; }
  const std::vector<int64_t>& strides() const { return strides_; }
  int64_t dim(int i) const { return shape_.at(static_cast<std::size_t>(i < 0 ? i + rank() : i)); }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t numel() const;
  DType dtype() const { return dtype_; }
  Device device() const { return device_; }
  bool defined() const { return storage_ != nullptr; }
  bool is_contiguous() const;
  std::size_t nbytes() const { return static_cast<std::size_t>(numel()) * dtype_size(dtype_); }

  void* raw() const { return static_cast<char*>(storage_.get()) + offset_ * static_cast<int64_t>(dtype_size(dtype_)); }
  template <class T>
  T* data() const {
    check_type(sizeof(T));
    return static_cast<T*>(raw());
  }

  // Same storage, new shape; requires a contiguous tensor and the same element count.
  Tensor reshape(std::vector<int64_t> shape) const;
  // Rows [begin, end) of the first dimension (a view).
  Tensor narrow0(int64_t begin, int64_t end) const;
  std::string shape_str() const;

 private:
  void check_type(std::size_t elem_size) const;
  std::vector<int64_t> shape_;
  std::vector<int64_t> strides_;
  DType dtype_ = DType::f32;
  Device device_{};
  std::shared_ptr<void> storage_;
  int64_t offset_ = 0;
};

}  // namespace hetrec
