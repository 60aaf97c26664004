#include "core/tensor.h"

#include <cstdlib>
#include <cstring>
#include <new>

namespace hetrec {

std::string Device::str() const {
  return kind == DeviceKind::cpu ? std::string("cpu") : "gpu:" + std::to_string(index);
}

void* HostAllocator::allocate(std::size_t bytes) {
  constexpr std::size_t kAlign = 64;  // a cache line; also enough for AVX-512 loads
  const std::size_t rounded = (bytes + kAlign - 1) / kAlign * kAlign;
  void* p = std::aligned_alloc(kAlign, rounded == 0 ? kAlign : rounded);
  if (!p) throw OutOfMemoryError("host allocation of " + std::to_string(bytes) + " bytes failed");
  return p;
}

void HostAllocator::deallocate(void* ptr, std::size_t) { std::free(ptr); }

HostAllocator& HostAllocator::instance() {
  static HostAllocator alloc;
  return alloc;
}

Tensor Tensor::empty(std::vector<int64_t> shape, DType dtype, Allocator& alloc) {
  Tensor t;
  t.shape_ = std::move(shape);
  t.strides_.assign(t.shape_.size(), 1);
  for (int i = static_cast<int>(t.shape_.size()) - 2; i >= 0; --i)
    t.strides_[static_cast<std::size_t>(i)] = t.strides_[static_cast<std::size_t>(i) + 1] * t.shape_[static_cast<std::size_t>(i) + 1];
  for (int64_t d : t.shape_)
    if (d < 0) throw InternalError("Tensor::empty: negative dimension in " + t.shape_str());
  t.dtype_ = dtype;
  t.device_ = alloc.device();
  const std::size_t bytes = t.nbytes();
  void* p = alloc.allocate(bytes);
  Allocator* a = &alloc;
  t.storage_ = std::shared_ptr<void>(p, [a, bytes](void* q) { a->deallocate(q, bytes); });
  return t;
}

Tensor Tensor::zeros(std::vector<int64_t> shape, DType dtype) {
  Tensor t = empty(std::move(shape), dtype);
  std::memset(t.raw(), 0, t.nbytes());
  return t;
}

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape_) n *= d;
  return n;
}

bool Tensor::is_contiguous() const {
  int64_t expect = 1;
  for (int i = rank() - 1; i >= 0; --i) {
    const auto k = static_cast<std::size_t>(i);
    if (shape_[k] != 1 && strides_[k] != expect) return false;
    expect *= shape_[k];
  }
  return true;
}

Tensor Tensor::reshape(std::vector<int64_t> shape) const {
  if (!is_contiguous()) throw InternalError("reshape of a non-contiguous tensor " + shape_str());
  Tensor t = *this;
  t.shape_ = std::move(shape);
  if (t.numel() != numel())
    throw InternalError("reshape " + shape_str() + " -> " + t.shape_str() + ": element count differs");
  t.strides_.assign(t.shape_.size(), 1);
  for (int i = t.rank() - 2; i >= 0; --i)
    t.strides_[static_cast<std::size_t>(i)] = t.strides_[static_cast<std::size_t>(i) + 1] * t.shape_[static_cast<std::size_t>(i) + 1];
  return t;
}

Tensor Tensor::narrow0(int64_t begin, int64_t end) const {
  if (rank() == 0 || begin < 0 || end < begin || end > shape_[0])
    throw InternalError("narrow0 [" + std::to_string(begin) + ", " + std::to_string(end) + ") of " + shape_str());
  Tensor t = *this;
  t.shape_[0] = end - begin;
  t.offset_ += begin * strides_[0];
  return t;
}

std::string Tensor::shape_str() const {
  std::string s = "[";
  for (std::size_t i = 0; i < shape_.size(); ++i) s += (i ? ", " : "") + std::to_string(shape_[i]);
  return s + "]";
}

void Tensor::check_type(std::size_t elem_size) const {
  if (elem_size != dtype_size(dtype_))
    throw InternalError("Tensor::data: element size " + std::to_string(elem_size) + " does not match dtype " +
                        std::string(dtype_name(dtype_)));
}

}  // namespace hetrec
