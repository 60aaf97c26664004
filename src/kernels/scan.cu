#include "kernels/scan.h"

#include "core/error.h"
#include "gpu/check.h"
#include "gpu/memory.h"
#include "gpu/warp.h"
#include "kernels/launch.h"

namespace hetrec::kernels {

namespace {

// Threads, items and tiles: kernels/scan_geometry.h.
constexpr int kScanWarps = kScanThreads / gpu::kWarpSize;
static_assert(kScanThreads % gpu::kWarpSize == 0, "the block scan combines whole warps");

// Exclusive scan of one value per thread across the block; returns the block total too.
__device__ uint32_t block_exclusive_scan(uint32_t v, uint32_t& block_total) {
  __shared__ uint32_t warp_totals[kScanWarps];
  const uint32_t inclusive = gpu::warp_inclusive_scan(v);
  const int lane = gpu::lane_id();
  const int warp = gpu::warp_id();
  if (lane == gpu::kWarpSize - 1) warp_totals[warp] = inclusive;
  __syncthreads();
  uint32_t warp_offset = 0;
  block_total = 0;
  for (int w = 0; w < kScanWarps; ++w) {
    if (w < warp) warp_offset += warp_totals[w];
    block_total += warp_totals[w];
  }
  __syncthreads();  // warp_totals may be reused by the caller's next call
  return warp_offset + inclusive - v;
}

// Per-block totals of kScanTile-element tiles.
__global__ void __launch_bounds__(kScanThreads) tile_sums_kernel(const uint32_t* __restrict__ in, int64_t n, uint32_t* __restrict__ sums) {
  const int64_t base =
      static_cast<int64_t>(blockIdx.x) * kScanTile + static_cast<int64_t>(threadIdx.x) * kScanItemsPerThread;
  uint32_t local = 0;
#pragma unroll
  for (int i = 0; i < kScanItemsPerThread; ++i)
    if (base + i < n) local += in[base + i];
  uint32_t total = 0;
  (void)block_exclusive_scan(local, total);
  if (threadIdx.x == 0) sums[blockIdx.x] = total;
}

// Scans each tile and adds the tile's offset (tile_offsets null: a single tile).
__global__ void __launch_bounds__(kScanThreads) tile_scan_kernel(const uint32_t* in, uint32_t* out, int64_t n,
                                 const uint32_t* __restrict__ tile_offsets, uint32_t* total) {
  const int64_t base =
      static_cast<int64_t>(blockIdx.x) * kScanTile + static_cast<int64_t>(threadIdx.x) * kScanItemsPerThread;
  uint32_t v[kScanItemsPerThread];
  uint32_t local = 0;
#pragma unroll
  for (int i = 0; i < kScanItemsPerThread; ++i) {
    v[i] = base + i < n ? in[base + i] : 0u;
    local += v[i];
  }
  uint32_t block_total = 0;
  uint32_t running = block_exclusive_scan(local, block_total);
  const uint32_t offset = tile_offsets ? tile_offsets[blockIdx.x] : 0u;
  running += offset;
#pragma unroll
  for (int i = 0; i < kScanItemsPerThread; ++i) {
    if (base + i < n) out[base + i] = running;
    running += v[i];
  }
  if (total && threadIdx.x == 0 && blockIdx.x == gridDim.x - 1) *total = offset + block_total;
}

}  // namespace

void exclusive_scan(const uint32_t* in, uint32_t* out, int64_t n, uint32_t* total, void* workspace,
                    std::size_t workspace_bytes, gpu::stream_t stream) {
  if (n <= 0) {
    if (total) gpu::memset_async(total, 0, sizeof(uint32_t), stream);
    return;
  }
  if (workspace_bytes < exclusive_scan_workspace_bytes(n))
    throw InternalError("exclusive_scan: workspace of " + std::to_string(workspace_bytes) + " bytes, need " +
                        std::to_string(exclusive_scan_workspace_bytes(n)));
  if (n <= kScanTile) {
    tile_scan_kernel<<<1, kScanThreads, 0, stream>>>(in, out, n, nullptr, total);
    HETREC_GPU_CHECK_LAUNCH("tile_scan_kernel");
    return;
  }
  const int64_t tiles = ceil_div<int64_t>(n, kScanTile);
  auto* tile_offsets = static_cast<uint32_t*>(workspace);
  const std::size_t own = workspace_aligned(static_cast<std::size_t>(tiles) * sizeof(uint32_t));
  tile_sums_kernel<<<grid_for(tiles, 1), kScanThreads, 0, stream>>>(in, n, tile_offsets);
  HETREC_GPU_CHECK_LAUNCH("tile_sums_kernel");
  exclusive_scan(tile_offsets, tile_offsets, tiles, nullptr, static_cast<char*>(workspace) + own, workspace_bytes - own,
                 stream);
  tile_scan_kernel<<<grid_for(tiles, 1), kScanThreads, 0, stream>>>(in, out, n, tile_offsets, total);
  HETREC_GPU_CHECK_LAUNCH("tile_scan_kernel");
}

}  // namespace hetrec::kernels
