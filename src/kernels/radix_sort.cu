#include "kernels/radix_sort.h"

#include <utility>

#include "core/error.h"
#include "gpu/check.h"
#include "gpu/warp.h"
#include "kernels/launch.h"
#include "kernels/scan.h"

namespace hetrec::kernels {

namespace {

constexpr int kDigitBits = 8;
constexpr int kDigits = 1 << kDigitBits;
// One thread per digit in the cross-warp prefix step, so a block has kDigits threads.
constexpr int kSortThreads = kDigits;
constexpr int kSortWarps = kSortThreads / gpu::kWarpSize;
static_assert(kSortThreads % gpu::kWarpSize == 0, "the ballot ranking needs whole warps");
constexpr int kItemsPerThread = 8;
constexpr int64_t kSortTile = static_cast<int64_t>(kSortThreads) * kItemsPerThread;
constexpr std::size_t kAlign = 256;

std::size_t aligned(std::size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

__device__ inline int64_t item_count(const int32_t* num_items, int64_t capacity) {
  return num_items ? static_cast<int64_t>(*num_items) : capacity;
}

// counts[digit * tiles + tile] = keys of this tile with that digit.
__global__ void __launch_bounds__(kSortThreads)
    digit_histogram_kernel(const uint32_t* __restrict__ keys, const int32_t* num_items, int64_t capacity, int shift,
                           uint32_t digit_mask, uint32_t* __restrict__ counts) {
  __shared__ uint32_t histogram[kDigits];
  histogram[threadIdx.x] = 0;
  __syncthreads();
  const int64_t n = item_count(num_items, capacity);
  const int64_t base = static_cast<int64_t>(blockIdx.x) * kSortTile;
#pragma unroll
  for (int r = 0; r < kItemsPerThread; ++r) {
    const int64_t i = base + static_cast<int64_t>(r) * kSortThreads + threadIdx.x;
    if (i < n) atomicAdd(&histogram[(keys[i] >> shift) & digit_mask], 1u);
  }
  __syncthreads();
  counts[static_cast<int64_t>(threadIdx.x) * gridDim.x + blockIdx.x] = histogram[threadIdx.x];
}

// Writes each pair to offsets[digit * tiles + tile] + (its rank among the tile's pairs of
// that digit, in input order): a stable scatter. Ranks within a warp come from ballots
// (lanes whose digit matches bit by bit), across warps from per-warp digit counts.
__global__ void __launch_bounds__(kSortThreads)
    digit_scatter_kernel(const uint32_t* __restrict__ keys_in, const uint32_t* __restrict__ values_in,
                         uint32_t* __restrict__ keys_out, uint32_t* __restrict__ values_out, const int32_t* num_items,
                         int64_t capacity, int shift, uint32_t digit_mask, const uint32_t* __restrict__ offsets) {
  __shared__ uint32_t running[kDigits];             // next free output slot per digit
  __shared__ uint32_t warp_counts[kSortWarps][kDigits];  // then: exclusive prefix over warps
  const int tid = static_cast<int>(threadIdx.x);
  const int warp = gpu::warp_id();
  running[tid] = offsets[static_cast<int64_t>(tid) * gridDim.x + blockIdx.x];
  const int64_t n = item_count(num_items, capacity);
  const int64_t base = static_cast<int64_t>(blockIdx.x) * kSortTile;

  for (int r = 0; r < kItemsPerThread; ++r) {
    const int64_t i = base + static_cast<int64_t>(r) * kSortThreads + tid;
    const bool valid = i < n;
    const uint32_t key = valid ? keys_in[i] : 0u;
    const uint32_t value = valid ? values_in[i] : 0u;
    const int digit = static_cast<int>((key >> shift) & digit_mask);
    for (int k = tid; k < kSortWarps * kDigits; k += kSortThreads) (&warp_counts[0][0])[k] = 0;
    __syncthreads();

    gpu::lane_mask_t peers = gpu::warp_ballot(valid);
#pragma unroll
    for (int bit = 0; bit < kDigitBits; ++bit) {
      const bool set = (digit >> bit) & 1;
      const gpu::lane_mask_t m = gpu::warp_ballot(set);
      peers &= set ? m : ~m;
    }
    const int rank_in_warp = gpu::popc(peers & gpu::lanes_below());
    if (valid && rank_in_warp == 0) warp_counts[warp][digit] = static_cast<uint32_t>(gpu::popc(peers));
    __syncthreads();

    uint32_t digit_total = 0;  // thread tid owns digit tid
    for (int w = 0; w < kSortWarps; ++w) {
      const uint32_t c = warp_counts[w][tid];
      warp_counts[w][tid] = digit_total;
      digit_total += c;
    }
    __syncthreads();

    if (valid) {
      const uint32_t pos = running[digit] + warp_counts[warp][digit] + static_cast<uint32_t>(rank_in_warp);
      keys_out[pos] = key;
      values_out[pos] = value;
    }
    __syncthreads();
    running[tid] += digit_total;
  }
}

}  // namespace

std::size_t radix_sort_workspace_bytes(int64_t capacity) {
  const int64_t tiles = ceil_div<int64_t>(capacity > 0 ? capacity : 1, kSortTile);
  const int64_t counts = tiles * kDigits;
  return aligned(static_cast<std::size_t>(counts) * sizeof(uint32_t)) + exclusive_scan_workspace_bytes(counts);
}

bool radix_sort_pairs(const SortBuffers& buffers, const int32_t* num_items, int64_t capacity, int key_bits,
                      void* workspace, std::size_t workspace_bytes, gpu::stream_t stream) {
  if (key_bits < 0 || key_bits > 32) throw InternalError("radix_sort_pairs: key_bits must be in [0, 32]");
  if (capacity > (int64_t{1} << 32) - 1) throw InternalError("radix_sort_pairs: capacity exceeds 32-bit positions");
  if (workspace_bytes < radix_sort_workspace_bytes(capacity))
    throw InternalError("radix_sort_pairs: workspace too small");
  if (capacity <= 0) return true;
  const int64_t tiles = ceil_div<int64_t>(capacity, kSortTile);
  const int64_t counts_len = tiles * kDigits;
  auto* counts = static_cast<uint32_t*>(workspace);
  const std::size_t own = aligned(static_cast<std::size_t>(counts_len) * sizeof(uint32_t));
  void* scan_ws = static_cast<char*>(workspace) + own;
  const std::size_t scan_bytes = workspace_bytes - own;

  const uint32_t* keys_in = buffers.keys;
  const uint32_t* values_in = buffers.values;
  uint32_t* keys_out = buffers.keys_alt;
  uint32_t* values_out = buffers.values_alt;
  bool in_primary = true;
  for (int shift = 0; shift < key_bits; shift += kDigitBits) {
    // The last pass looks at the remaining bits only: bits above key_bits are ignored.
    const int bits = key_bits - shift < kDigitBits ? key_bits - shift : kDigitBits;
    const uint32_t digit_mask = (1u << bits) - 1u;
    digit_histogram_kernel<<<grid_for(tiles, 1), kSortThreads, 0, stream>>>(keys_in, num_items, capacity, shift,
                                                                            digit_mask, counts);
    HETREC_GPU_CHECK_LAUNCH("digit_histogram_kernel");
    exclusive_scan(counts, counts, counts_len, nullptr, scan_ws, scan_bytes, stream);
    digit_scatter_kernel<<<grid_for(tiles, 1), kSortThreads, 0, stream>>>(keys_in, values_in, keys_out, values_out,
                                                                         num_items, capacity, shift, digit_mask,
                                                                         counts);
    HETREC_GPU_CHECK_LAUNCH("digit_scatter_kernel");
    in_primary = !in_primary;
    keys_in = keys_out;
    values_in = values_out;
    keys_out = in_primary ? buffers.keys_alt : buffers.keys;
    values_out = in_primary ? buffers.values_alt : buffers.values;
  }
  return in_primary;
}

}  // namespace hetrec::kernels
