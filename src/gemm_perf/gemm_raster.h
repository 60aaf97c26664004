#pragma once
// Which operand panels a wave of concurrently running output tiles touches. A wave is W
// consecutively launched tiles; the tile rows it touches each need one panel of A (tile_m
// x K) and the tile columns one panel of B (K x tile_n). On GPUs with several XCDs each
// XCD has its own L2 and, by default, workgroups are dealt to the XCDs round robin, so a
// wave's panels are fetched once per XCD that touches them.
#include <cstdint>

#include "gemm_perf/gemm_config.h"

namespace hetrec::inline gemm_perf {

struct WaveFootprint {
  double rows = 0.0;          // distinct tile rows touched by one wave (expected over waves)
  double cols = 0.0;          // distinct tile columns
  double rows_per_xcd = 0.0;  // as seen by one XCD (equal to rows/cols when xcds == 1)
  double cols_per_xcd = 0.0;
};

// `wave_tiles` concurrently running tiles of a tiles_m x tiles_n grid launched in the
// order of `raster`/`swizzle`; `xcds` dies, dealt round robin unless `xcd_remap` gives each
// XCD a contiguous run. Closed-form averages over the waves, exact on aligned grids; a
// short last raster group (tiles not divisible by the swizzle) is not modelled.
WaveFootprint wave_footprint(int64_t tiles_m, int64_t tiles_n, double wave_tiles, GemmRaster raster,
                             int swizzle, int xcds, bool xcd_remap);

// The launch order itself: the (row, col) of the tile launched `index`-th. Used to check
// the closed forms against a direct count.
void raster_tile(int64_t tiles_m, int64_t tiles_n, GemmRaster raster, int swizzle, int64_t index,
                 int64_t* row, int64_t* col);

}  // namespace hetrec::gemm_perf::gemm_perf
