// The vendor library's radix sort behind the engine sort's interface: CUB on CUDA,
// rocPRIM on HIP (Debian's librocprim-dev; header-only), both through their double-buffer
// forms, so the sort ping-pongs between the caller's buffers and its scratch holds only
// counters.
#include "kernels/library_sort.h"

#include <algorithm>
#include <string>

#if defined(HETREC_GPU_HIP)  // gpu/platform.h, through kernels/library_sort.h
#include <rocprim/device/device_radix_sort.hpp>
#else
#include <cub/device/device_radix_sort.cuh>
#endif

#include "core/error.h"
#include "gpu/check.h"
#include "kernels/launch.h"

namespace hetrec::kernels {

namespace {

// Threads and blocks of the padding kernel: a grid-stride loop, so its grid does not
// grow with the capacity (with a full batch it has nothing to write).
constexpr int kPadThreads = 256;
constexpr int64_t kPadBlocks = 1024;

// keys[i] = all ones for i in [*num_items, capacity).
__global__ void __launch_bounds__(kPadThreads)
    pad_sort_tail_kernel(uint32_t* __restrict__ keys, const int32_t* num_items, int64_t capacity) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kPadThreads;
  for (int64_t i = static_cast<int64_t>(*num_items) + static_cast<int64_t>(blockIdx.x) * kPadThreads + threadIdx.x;
       i < capacity; i += stride)
    keys[i] = 0xFFFFFFFFu;
}

void check_arguments(int64_t capacity, int key_bits) {
  if (key_bits < 0 || key_bits > 32) throw InternalError("library_sort_pairs: key_bits must be in [0, 32]");
  if (capacity > int64_t{0x7FFFFFFF})
    throw InternalError("library_sort_pairs: capacity " + std::to_string(capacity) +
                        " exceeds the library's 32-bit item count");
}

#if defined(HETREC_GPU_HIP)
using KeyBuffer = rocprim::double_buffer<uint32_t>;
// rocPRIM: storage_size is written when temp is null, otherwise the sort runs. After a
// sort, current() is the buffer holding the result.
std::size_t library_call(void* temp, std::size_t bytes, KeyBuffer& keys, KeyBuffer& values, int n, int key_bits,
                         gpu::stream_t stream) {
  HETREC_GPU_CHECK(rocprim::radix_sort_pairs(temp, bytes, keys, values, n, 0u, static_cast<unsigned>(key_bits),
                                             stream));
  return bytes;
}
uint32_t* current(KeyBuffer& b) { return b.current(); }
#else
using KeyBuffer = cub::DoubleBuffer<uint32_t>;
// CUB: the same contract (temp_storage_bytes written when d_temp_storage is null;
// Current() holds the result).
std::size_t library_call(void* temp, std::size_t bytes, KeyBuffer& keys, KeyBuffer& values, int n, int key_bits,
                         gpu::stream_t stream) {
  HETREC_GPU_CHECK(cub::DeviceRadixSort::SortPairs(temp, bytes, keys, values, n, 0, key_bits, stream));
  return bytes;
}
uint32_t* current(KeyBuffer& b) { return b.Current(); }
#endif

}  // namespace

std::size_t library_sort_workspace_query(int64_t capacity, int key_bits) {
  check_arguments(capacity, key_bits);
  if (capacity <= 0 || key_bits == 0) return 0;
  KeyBuffer keys(nullptr, nullptr), values(nullptr, nullptr);
  return library_call(nullptr, 0, keys, values, static_cast<int>(capacity), key_bits, nullptr);
}

bool library_sort_pairs(const SortBuffers& buffers, const int32_t* num_items, int64_t capacity, int key_bits,
                        void* workspace, std::size_t workspace_bytes, gpu::stream_t stream) {
  check_arguments(capacity, key_bits);
  // No bits: every key ties and the stable order is the input's, where it already is.
  if (capacity <= 0 || key_bits == 0) return true;
  const std::size_t needed = library_sort_workspace_query(capacity, key_bits);
  if (needed > workspace_bytes)
    throw InternalError("library_sort_pairs: the library asks for " + std::to_string(needed) +
                        " bytes of scratch to sort " + std::to_string(capacity) + " pairs, the workspace has " +
                        std::to_string(workspace_bytes) + " (library_sort_workspace_bound is too small)");
  if (num_items) {
    const int64_t blocks = std::min(blocks_of(capacity, kPadThreads), kPadBlocks);
    pad_sort_tail_kernel<<<grid_for(blocks, 1), kPadThreads, 0, stream>>>(buffers.keys, num_items, capacity);
    HETREC_GPU_CHECK_LAUNCH("pad_sort_tail_kernel");
  }
  KeyBuffer keys(buffers.keys, buffers.keys_alt), values(buffers.values, buffers.values_alt);
  library_call(workspace, workspace_bytes, keys, values, static_cast<int>(capacity), key_bits, stream);
  const bool in_primary = current(keys) == buffers.keys;
  if (in_primary != (current(values) == buffers.values))
    throw InternalError("library_sort_pairs: the library left keys and values in different buffers");
  return in_primary;
}

}  // namespace hetrec::kernels
