// Stable least-significant-digit radix sort, 8-bit digits, three launches per pass: a
// per-tile digit histogram, an exclusive scan of the counts laid out digit-major,
// tile-minor (which gives every (digit, tile) run its output offset), and a scatter.
//
// The scatter's global writes are coalesced. A block ranks its whole tile stably by
// digit (ballots rank a warp's pairs within a round, a per-warp count of each digit
// carries the rank across the warp's rounds, and a per-digit scan over warps and digits
// places each warp's pairs in the tile), stages the keys in shared memory in
// digit-sorted order and reads them back in that order: consecutive threads then hold
// consecutive pairs of one digit's run and write consecutive addresses of its output
// range (the digit's output offset + the position in the sorted tile - the digit's first
// position in the tile). The values follow through the same buffer. Writing each pair
// straight to its destination instead sends every round of a block to up to 256 digit
// ranges, one memory transaction per 4-byte write: on the H200 that scatter took 1.03 ms a
// pass over 28 M pairs (0.43 TB/s), the staged one takes 0.24 ms.
#include "kernels/radix_sort.h"

#include <utility>

#include "core/error.h"
#include "gpu/check.h"
#include "gpu/warp.h"
#include "kernels/launch.h"
#include "kernels/scan.h"

namespace hetrec::kernels {

namespace {

// Digits, threads and tiles: kernels/radix_sort_geometry.h.
constexpr int kSortWarps = kSortThreads / gpu::kWarpSize;
static_assert(kSortThreads % gpu::kWarpSize == 0, "the ballot ranking needs whole warps");
// Shared memory of a block stays within half of an AMD CU's 64 KB of LDS, so at least two
// blocks fit there (an H200 SM has 228 KB).
constexpr std::size_t kSharedBudget = 32 * 1024;
// Scatter blocks per SM the register allocation must allow (80 registers a thread, a few
// spilled): 1.23 ms a sort on the H200 against 1.87 ms with the 126 registers the compiler
// picks unbounded (2 blocks) and 1.56 ms at 4 blocks (64 registers, more spills). Under
// HIP the bound counts waves per SIMD: one wave of a 256-thread block per SIMD of a CU,
// so the same number of blocks.
constexpr int kScatterMinBlocks = 3;

__device__ inline int64_t item_count(const int32_t* num_items, int64_t capacity) {
  return num_items ? static_cast<int64_t>(*num_items) : capacity;
}

// Pairs of this block's tile below the item count: kSortTile, fewer in the last tile, 0
// in tiles past the count.
__device__ inline int tile_items(const int32_t* num_items, int64_t capacity) {
  const int64_t n = item_count(num_items, capacity);
  const int64_t base = static_cast<int64_t>(blockIdx.x) * kSortTile;
  if (n <= base) return 0;
  return n - base < kSortTile ? static_cast<int>(n - base) : kSortTile;
}

// counts[digit * tiles + tile] = keys of this tile with that digit. Each warp counts into
// its own shared histogram, so shared atomics contend only inside a warp.
__global__ void __launch_bounds__(kSortThreads)
    digit_histogram_kernel(const uint32_t* __restrict__ keys, const int32_t* num_items, int64_t capacity, int shift,
                           uint32_t digit_mask, uint32_t* __restrict__ counts) {
  __shared__ uint32_t warp_histograms[kSortWarps][kSortDigits];
  static_assert(sizeof(warp_histograms) <= kSharedBudget, "histogram shared memory over budget");
  const int tid = static_cast<int>(threadIdx.x);
  for (int w = 0; w < kSortWarps; ++w) warp_histograms[w][tid] = 0;
  const int tile_n = tile_items(num_items, capacity);
  const uint32_t* tile_keys = keys + static_cast<int64_t>(blockIdx.x) * kSortTile;
  uint32_t key[kSortItemsPerThread];
#pragma unroll
  for (int r = 0; r < kSortItemsPerThread; ++r) {
    const int q = r * kSortThreads + tid;
    key[r] = q < tile_n ? tile_keys[q] : 0u;
  }
  __syncthreads();
  uint32_t* mine = warp_histograms[gpu::warp_id()];
#pragma unroll
  for (int r = 0; r < kSortItemsPerThread; ++r)
    if (r * kSortThreads + tid < tile_n) atomicAdd(&mine[(key[r] >> shift) & digit_mask], 1u);
  __syncthreads();
  uint32_t total = 0;
  for (int w = 0; w < kSortWarps; ++w) total += warp_histograms[w][tid];
  counts[static_cast<int64_t>(tid) * gridDim.x + blockIdx.x] = total;
}

// Pairs of one warp's contiguous share of a tile.
constexpr int kWarpItems = gpu::kWarpSize * kSortItemsPerThread;

// The ranking's counters and the staging buffer are never live together.
union ScatterStorage {
  // Ranking: pairs of each digit a warp has seen so far; then the sorted-tile position of
  // the warp's first pair of each digit.
  uint32_t warp_digits[kSortWarps][kSortDigits];
  uint32_t staged[kSortTile];  // the tile's keys, then its values, in digit-sorted order
};
static_assert(sizeof(ScatterStorage) + (kSortDigits + kSortWarps) * sizeof(uint32_t) <= kSharedBudget,
              "scatter shared memory over budget");

// Writes the tile's pairs, stably ordered by digit, to offsets[digit * tiles + tile] + (rank
// among the tile's pairs of that digit). Warp w ranks the tile's w-th share of kWarpItems
// consecutive pairs, kWarpSize at a time (lane l of round r holds pair
// w * kWarpItems + r * kWarpSize + l), so input order is (warp, round, lane) order.
__global__ void __launch_bounds__(kSortThreads, kScatterMinBlocks)
    digit_scatter_kernel(const uint32_t* __restrict__ keys_in, const uint32_t* __restrict__ values_in,
                         uint32_t* __restrict__ keys_out, uint32_t* __restrict__ values_out, const int32_t* num_items,
                         int64_t capacity, int shift, uint32_t digit_mask, const uint32_t* __restrict__ offsets) {
  __shared__ ScatterStorage storage;
  __shared__ uint32_t output_shift[kSortDigits];  // output index minus sorted-tile position, per digit
  __shared__ uint32_t warp_totals[kSortWarps];
  const int tile_n = tile_items(num_items, capacity);
  if (tile_n == 0) return;  // the whole block: the count is the same for every thread
  const int tid = static_cast<int>(threadIdx.x);
  const int warp = gpu::warp_id();
  const int lane = gpu::lane_id();
  const int64_t base = static_cast<int64_t>(blockIdx.x) * kSortTile;
  const uint32_t digit_output = offsets[static_cast<int64_t>(tid) * gridDim.x + blockIdx.x];  // digit tid's
  for (int w = 0; w < kSortWarps; ++w) storage.warp_digits[w][tid] = 0;

  const int first = warp * kWarpItems + lane;  // this thread's pair of round 0
  uint32_t key[kSortItemsPerThread], value[kSortItemsPerThread];
#pragma unroll
  for (int r = 0; r < kSortItemsPerThread; ++r) {
    const int q = first + r * gpu::kWarpSize;
    key[r] = q < tile_n ? keys_in[base + q] : 0u;
    value[r] = q < tile_n ? values_in[base + q] : 0u;
  }
  __syncthreads();

  // Rank of each pair among its warp's pairs of the same digit: the warp's count of the
  // digit before this round (read and advanced by the lowest lane holding the digit) plus
  // the lanes below holding it.
  uint32_t* seen = storage.warp_digits[warp];
  uint32_t slot[kSortItemsPerThread];
#pragma unroll
  for (int r = 0; r < kSortItemsPerThread; ++r) {
    const bool valid = first + r * gpu::kWarpSize < tile_n;
    const uint32_t digit = (key[r] >> shift) & digit_mask;
    gpu::lane_mask_t peers = gpu::warp_ballot(valid);  // valid lanes of the same digit
#pragma unroll
    for (int bit = 0; bit < kSortDigitBits; ++bit) {
      const bool set = (digit >> bit) & 1u;
      const gpu::lane_mask_t m = gpu::warp_ballot(set);
      peers &= set ? m : ~m;
    }
    const int rank_in_warp = gpu::popc(peers & gpu::lanes_below());
    uint32_t before = 0;
    if (valid && rank_in_warp == 0) {
      before = seen[digit];
      seen[digit] = before + static_cast<uint32_t>(gpu::popc(peers));
    }
    const int leader = valid ? gpu::lowest_lane(peers) : lane;  // invalid lanes: result unused
    slot[r] = gpu::shfl(before, leader) + static_cast<uint32_t>(rank_in_warp);
    gpu::warp_sync();  // this round's counts are visible to the next round's leaders
  }
  __syncthreads();

  // Thread tid turns digit tid's per-warp counts into positions in the sorted tile: the
  // digit's start (an exclusive scan over digits of the tile's counts) plus the digit's
  // pairs in earlier warps.
  uint32_t digit_count = 0;
  for (int w = 0; w < kSortWarps; ++w) {
    const uint32_t c = storage.warp_digits[w][tid];
    storage.warp_digits[w][tid] = digit_count;
    digit_count += c;
  }
  const uint32_t inclusive = gpu::warp_inclusive_scan(digit_count);
  if (lane == gpu::kWarpSize - 1) warp_totals[warp] = inclusive;
  __syncthreads();
  uint32_t start = inclusive - digit_count;
  for (int w = 0; w < warp; ++w) start += warp_totals[w];
  for (int w = 0; w < kSortWarps; ++w) storage.warp_digits[w][tid] += start;
  output_shift[tid] = digit_output - start;  // modulo 2^32; output_shift + position is an index < 2^32
  __syncthreads();
#pragma unroll
  for (int r = 0; r < kSortItemsPerThread; ++r)
    if (first + r * gpu::kWarpSize < tile_n) slot[r] += seen[(key[r] >> shift) & digit_mask];
  __syncthreads();  // every read of warp_digits is done before staged overwrites it

#pragma unroll
  for (int r = 0; r < kSortItemsPerThread; ++r)
    if (first + r * gpu::kWarpSize < tile_n) storage.staged[slot[r]] = key[r];
  __syncthreads();
  // Sorted position q is read by thread q % kSortThreads: consecutive threads write
  // consecutive output indices within each digit's run.
  uint32_t out_index[kSortItemsPerThread];
#pragma unroll
  for (int r = 0; r < kSortItemsPerThread; ++r) {
    const int q = r * kSortThreads + tid;
    if (q < tile_n) {
      const uint32_t k = storage.staged[q];
      out_index[r] = output_shift[(k >> shift) & digit_mask] + static_cast<uint32_t>(q);
      keys_out[out_index[r]] = k;
    }
  }
  __syncthreads();
#pragma unroll
  for (int r = 0; r < kSortItemsPerThread; ++r)
    if (first + r * gpu::kWarpSize < tile_n) storage.staged[slot[r]] = value[r];
  __syncthreads();
#pragma unroll
  for (int r = 0; r < kSortItemsPerThread; ++r) {
    const int q = r * kSortThreads + tid;
    if (q < tile_n) values_out[out_index[r]] = storage.staged[q];
  }
}

}  // namespace

bool radix_sort_pairs(const SortBuffers& buffers, const int32_t* num_items, int64_t capacity, int key_bits,
                      void* workspace, std::size_t workspace_bytes, gpu::stream_t stream) {
  if (key_bits < 0 || key_bits > 32) throw InternalError("radix_sort_pairs: key_bits must be in [0, 32]");
  if (capacity > (int64_t{1} << 32) - 1) throw InternalError("radix_sort_pairs: capacity exceeds 32-bit positions");
  if (workspace_bytes < radix_sort_workspace_bytes(capacity))
    throw InternalError("radix_sort_pairs: workspace too small");
  if (capacity <= 0) return true;
  const int64_t tiles = radix_sort_tiles(capacity);
  const int64_t counts_len = radix_sort_counts(capacity);
  auto* counts = static_cast<uint32_t*>(workspace);
  const std::size_t own = workspace_aligned(static_cast<std::size_t>(counts_len) * sizeof(uint32_t));
  void* scan_ws = static_cast<char*>(workspace) + own;
  const std::size_t scan_bytes = workspace_bytes - own;

  const uint32_t* keys_in = buffers.keys;
  const uint32_t* values_in = buffers.values;
  uint32_t* keys_out = buffers.keys_alt;
  uint32_t* values_out = buffers.values_alt;
  bool in_primary = true;
  for (int shift = 0; shift < key_bits; shift += kSortDigitBits) {
    // The last pass looks at the remaining bits only: bits above key_bits are ignored.
    const int bits = key_bits - shift < kSortDigitBits ? key_bits - shift : kSortDigitBits;
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
