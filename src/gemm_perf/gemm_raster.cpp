#include "gemm_perf/gemm_raster.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace hetrec::inline gemm_perf {

namespace {

struct Extent {
  double rows;
  double cols;
};

// Footprint of a run of `w` consecutive tiles in an along_n order over `slow` x `fast`
// tiles with groups of `g` rows (G = g x fast tiles per group), averaged over the runs
// that start at multiples of w. Such a run touches (w - d) / L + 1 lines of length L on
// average, d = gcd(w, L) (the start offsets take the multiples of d).
Extent run_extent(int64_t w, int64_t slow, int64_t fast, int64_t g) {
  const int64_t group = g * fast;
  const double groups_touched = double(w - std::gcd(w, group)) / double(group) + 1.0;
  Extent e;
  e.rows = std::min(double(slow), double(std::min(g, w)) * groups_touched);
  e.cols = w <= group ? std::min(double(fast), double(w - std::gcd(w, g)) / double(g) + 1.0) : double(fast);
  return e;
}

}  // namespace

void raster_tile(int64_t tiles_m, int64_t tiles_n, GemmRaster raster, int swizzle, int64_t index,
                 int64_t* row, int64_t* col) {
  // Work in along_n coordinates; along_m swaps the roles of rows and columns.
  const bool along_n = raster == GemmRaster::along_n;
  const int64_t slow = along_n ? tiles_m : tiles_n;
  const int64_t fast = along_n ? tiles_n : tiles_m;
  const int64_t g = std::min<int64_t>(std::max(swizzle, 1), slow);
  const int64_t group = index / (g * fast);
  const int64_t q = index % (g * fast);
  const int64_t g_here = std::min(g, slow - group * g);  // the last group may be short
  const int64_t s = group * g + q % g_here;
  const int64_t f = q / g_here;
  *row = along_n ? s : f;
  *col = along_n ? f : s;
}

WaveFootprint wave_footprint(int64_t tiles_m, int64_t tiles_n, double wave_tiles, GemmRaster raster,
                             int swizzle, int xcds, bool xcd_remap) {
  const bool along_n = raster == GemmRaster::along_n;
  const int64_t slow = along_n ? tiles_m : tiles_n;
  const int64_t fast = along_n ? tiles_n : tiles_m;
  const int64_t g = std::min<int64_t>(std::max(swizzle, 1), slow);
  const int64_t w = std::clamp<int64_t>(std::llround(wave_tiles), 1, slow * fast);
  const Extent all = run_extent(w, slow, fast, g);
  Extent per_xcd = all;
  if (xcds > 1) {
    const int64_t x = xcds;
    const int64_t w_x = std::max<int64_t>(1, w / x);
    if (xcd_remap) {
      per_xcd = run_extent(w_x, slow, fast, g);
    } else {
      // XCD j sees positions j, j + X, j + 2X, ... Inside a group, position q is (row
      // q mod g, column q / g). Rows: g / gcd(g, X) residues in each group touched.
      // Columns: all of them when a column (g positions) holds every residue mod X;
      // otherwise G / X columns per group, in one of X / gcd(G, X) classes that the
      // successive groups cycle through.
      const int64_t group = g * fast;
      const double groups_touched = double(w - std::gcd(w, group)) / double(group) + 1.0;
      const double residues = double(g / std::gcd(g, x));
      per_xcd.rows = std::min({all.rows, double(w_x), residues * groups_touched});
      if (g >= x) {
        per_xcd.cols = std::min(all.cols, double(w_x));
      } else {
        const double classes = std::min(groups_touched, double(x / std::gcd(group, x)));
        per_xcd.cols = std::min({all.cols, double(w_x), classes * double(group) / double(x)});
      }
      // Each XCD runs w_x distinct tiles: its rows x columns must hold them.
      if (per_xcd.rows * per_xcd.cols < double(w_x))
        per_xcd.cols = std::min(all.cols, double(w_x) / per_xcd.rows);
    }
  }
  WaveFootprint fp;
  fp.rows = along_n ? all.rows : all.cols;
  fp.cols = along_n ? all.cols : all.rows;
  fp.rows_per_xcd = along_n ? per_xcd.rows : per_xcd.cols;
  fp.cols_per_xcd = along_n ? per_xcd.cols : per_xcd.rows;
  return fp;
}

}  // namespace hetrec::gemm_perf::gemm_perf
