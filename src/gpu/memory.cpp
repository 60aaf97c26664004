#include "gpu/memory.h"

#include <cstdio>
#include <string>

#include "core/error.h"
#include "gpu/check.h"

namespace hetrec::gpu {

namespace {

cudaMemcpyKind to_runtime(CopyKind kind) {
  switch (kind) {
    case CopyKind::host_to_device: return cudaMemcpyHostToDevice;
    case CopyKind::device_to_host: return cudaMemcpyDeviceToHost;
    case CopyKind::device_to_device: return cudaMemcpyDeviceToDevice;
    case CopyKind::any: return cudaMemcpyDefault;
  }
  return cudaMemcpyDefault;
}

std::string mib(std::size_t bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

}  // namespace

void* device_malloc(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  void* p = nullptr;
  const cudaError_t status = cudaMalloc(&p, bytes);
  if (status == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    std::size_t free_bytes = 0, total_bytes = 0;
    const bool known = cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess;
    throw OutOfMemoryError("device allocation of " + std::to_string(bytes) + " bytes (" + mib(bytes) +
                           ") failed: " +
                           (known ? mib(free_bytes) + " free of " + mib(total_bytes)
                                  : std::string("free memory unknown")));
  }
  check(status, "cudaMalloc", __FILE__, __LINE__);
  return p;
}

void device_free(void* ptr) noexcept {
  if (!ptr) return;
  const cudaError_t status = cudaFree(ptr);
  if (status != cudaSuccess) std::fprintf(stderr, "hetrec: cudaFree failed: %s\n", error_text(status).c_str());
}

void* pinned_malloc(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  void* p = nullptr;
  const cudaError_t status = cudaMallocHost(&p, bytes);
  if (status == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    throw OutOfMemoryError("pinned host allocation of " + std::to_string(bytes) + " bytes (" + mib(bytes) +
                           ") failed");
  }
  check(status, "cudaMallocHost", __FILE__, __LINE__);
  return p;
}

void pinned_free(void* ptr) noexcept {
  if (!ptr) return;
  const cudaError_t status = cudaFreeHost(ptr);
  if (status != cudaSuccess) std::fprintf(stderr, "hetrec: cudaFreeHost failed: %s\n", error_text(status).c_str());
}

void* mapped_host_malloc(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  void* p = nullptr;
  const cudaError_t status = cudaHostAlloc(&p, bytes, cudaHostAllocMapped);
  if (status == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    throw OutOfMemoryError("mapped pinned host allocation of " + std::to_string(bytes) + " bytes (" + mib(bytes) +
                           ") failed");
  }
  check(status, "cudaHostAlloc(mapped)", __FILE__, __LINE__);
  return p;
}

void* mapped_device_alias(void* host_ptr) {
  if (!host_ptr) return nullptr;
  void* device_ptr = nullptr;
  HETREC_GPU_CHECK(cudaHostGetDevicePointer(&device_ptr, host_ptr, 0));
  return device_ptr;
}

void memcpy_async(void* dst, const void* src, std::size_t bytes, CopyKind kind, stream_t stream) {
  if (bytes == 0) return;
  HETREC_GPU_CHECK(cudaMemcpyAsync(dst, src, bytes, to_runtime(kind), stream));
}

void memset_async(void* dst, int byte_value, std::size_t bytes, stream_t stream) {
  if (bytes == 0) return;
  HETREC_GPU_CHECK(cudaMemsetAsync(dst, byte_value, bytes, stream));
}

void memcpy_sync(void* dst, const void* src, std::size_t bytes, CopyKind kind) {
  if (bytes == 0) return;
  HETREC_GPU_CHECK(cudaMemcpy(dst, src, bytes, to_runtime(kind)));
}

}  // namespace hetrec::gpu
