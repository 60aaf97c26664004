#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <utility>
#include <vector>

#include "core/rng.h"
#include "gemm_perf/gemm_raster.h"

using namespace hetrec;

namespace {

// The launch order written out directly with nested loops (independent of raster_tile).
std::vector<std::pair<int64_t, int64_t>> launch_order(int64_t tiles_m, int64_t tiles_n, GemmRaster raster,
                                                      int swizzle) {
  std::vector<std::pair<int64_t, int64_t>> order;
  if (raster == GemmRaster::along_n) {
    for (int64_t g0 = 0; g0 < tiles_m; g0 += swizzle)
      for (int64_t col = 0; col < tiles_n; ++col)
        for (int64_t r = 0; r < std::min<int64_t>(swizzle, tiles_m - g0); ++r)
          order.emplace_back(g0 + r, col);
  } else {
    for (int64_t g0 = 0; g0 < tiles_n; g0 += swizzle)
      for (int64_t row = 0; row < tiles_m; ++row)
        for (int64_t c = 0; c < std::min<int64_t>(swizzle, tiles_n - g0); ++c)
          order.emplace_back(row, g0 + c);
  }
  return order;
}

struct Counted {
  double rows = 0, cols = 0, rows_x = 0, cols_x = 0;
};

// Distinct rows/columns per wave (and per XCD), averaged over the complete waves.
Counted count_footprint(const std::vector<std::pair<int64_t, int64_t>>& order, int64_t wave, int xcds,
                        bool remap) {
  Counted c;
  int waves = 0;
  for (int64_t start = 0; start + wave <= int64_t(order.size()); start += wave, ++waves) {
    std::set<int64_t> rows, cols;
    std::vector<std::set<int64_t>> xr(xcds), xc(xcds);
    const int64_t run = (wave + xcds - 1) / xcds;
    for (int64_t i = 0; i < wave; ++i) {
      const auto [r, col] = order[start + i];
      rows.insert(r), cols.insert(col);
      const int x = remap ? int(i / run) : int((start + i) % xcds);
      xr[x].insert(r), xc[x].insert(col);
    }
    c.rows += rows.size(), c.cols += cols.size();
    double sum_r = 0, sum_c = 0;
    int busy = 0;
    for (int x = 0; x < xcds; ++x) {
      if (xr[x].empty()) continue;
      sum_r += xr[x].size(), sum_c += xc[x].size(), ++busy;
    }
    c.rows_x += sum_r / busy, c.cols_x += sum_c / busy;
  }
  c.rows /= waves, c.cols /= waves, c.rows_x /= waves, c.cols_x /= waves;
  return c;
}

}  // namespace

TEST(GemmRaster, LaunchOrderVisitsEveryTileOnceInTheDocumentedOrder) {
  Rng rng(11);
  for (int trial = 0; trial < 200; ++trial) {
    const int64_t tm = 1 + rng.below(40), tn = 1 + rng.below(40);
    const GemmRaster raster = rng.below(2) ? GemmRaster::along_m : GemmRaster::along_n;
    const int swizzle = 1 + int(rng.below(9));
    const auto order = launch_order(tm, tn, raster, swizzle);
    ASSERT_EQ(int64_t(order.size()), tm * tn);
    std::set<std::pair<int64_t, int64_t>> seen;
    for (int64_t i = 0; i < tm * tn; ++i) {
      int64_t r = -1, c = -1;
      raster_tile(tm, tn, raster, swizzle, i, &r, &c);
      ASSERT_EQ(std::make_pair(r, c), order[i])
          << tm << "x" << tn << " swizzle " << swizzle << " index " << i;
      seen.emplace(r, c);
    }
    EXPECT_EQ(int64_t(seen.size()), tm * tn);
  }
}

TEST(GemmRaster, ClosedFormMatchesDirectCountOnAlignedGrids) {
  // 64 x 32 tiles, waves of 128 (a whole number of rows and groups): exact.
  auto order = launch_order(64, 32, GemmRaster::along_n, 1);
  Counted c = count_footprint(order, 128, 1, false);
  WaveFootprint fp = wave_footprint(64, 32, 128, GemmRaster::along_n, 1, 1, false);
  EXPECT_DOUBLE_EQ(c.rows, 4.0);
  EXPECT_DOUBLE_EQ(c.cols, 32.0);
  EXPECT_NEAR(fp.rows, c.rows, 0.05);
  EXPECT_DOUBLE_EQ(fp.cols, c.cols);
  // Groups of 8 rows: a wave of 128 covers 8 rows x 16 columns.
  order = launch_order(64, 32, GemmRaster::along_n, 8);
  c = count_footprint(order, 128, 1, false);
  fp = wave_footprint(64, 32, 128, GemmRaster::along_n, 8, 1, false);
  EXPECT_DOUBLE_EQ(c.rows, 8.0);
  EXPECT_DOUBLE_EQ(c.cols, 16.0);
  EXPECT_NEAR(fp.rows, 8.0, 0.01);
  EXPECT_NEAR(fp.cols, 16.0, 0.01);
  // Round robin over 8 XCDs with groups of 8 rows: each XCD sees one row, 16 columns.
  c = count_footprint(order, 128, 8, false);
  fp = wave_footprint(64, 32, 128, GemmRaster::along_n, 8, 8, false);
  EXPECT_DOUBLE_EQ(c.rows_x, 1.0);
  EXPECT_DOUBLE_EQ(c.cols_x, 16.0);
  EXPECT_NEAR(fp.rows_per_xcd, 1.0, 0.01);
  EXPECT_NEAR(fp.cols_per_xcd, 16.0, 0.01);
}

TEST(GemmRaster, ClosedFormTracksDirectCountOnRandomGrids) {
  Rng rng(12);
  double worst = 0.0, worst_x = 0.0;
  int checked = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const int64_t tm = 2 + rng.below(120), tn = 2 + rng.below(120);
    const GemmRaster raster = rng.below(2) ? GemmRaster::along_m : GemmRaster::along_n;
    const int swizzles[] = {1, 2, 4, 8, 16};
    const int swizzle = swizzles[rng.below(5)];
    const int xcds = rng.below(2) ? 8 : 1;
    const bool remap = xcds > 1 && rng.below(2);
    const int64_t wave = std::max<int64_t>(xcds, 1 + rng.below(std::min<int64_t>(tm * tn / 2, 400)));
    if (wave * 2 > tm * tn) continue;  // need at least two complete waves to average
    const int64_t slow = raster == GemmRaster::along_n ? tm : tn;
    if (swizzle < slow && slow % swizzle != 0) continue;  // a short last group is not modelled
    const auto order = launch_order(tm, tn, raster, swizzle);
    const Counted c = count_footprint(order, wave, xcds, remap);
    const WaveFootprint fp = wave_footprint(tm, tn, double(wave), raster, swizzle, xcds, remap);
    // Compare the quantity the model uses: panels touched, rows + columns.
    const double direct = c.rows + c.cols, closed = fp.rows + fp.cols;
    const double direct_x = c.rows_x + c.cols_x, closed_x = fp.rows_per_xcd + fp.cols_per_xcd;
    const double err = std::abs(closed - direct) / direct, err_x = std::abs(closed_x - direct_x) / direct_x;
    worst = std::max(worst, err);
    worst_x = std::max(worst_x, err_x);
    ++checked;
    EXPECT_LT(err, 0.10) << tm << "x" << tn << " wave " << wave << " swizzle " << swizzle << " raster "
                         << int(raster) << ": closed " << closed << " direct " << direct;
    EXPECT_LT(err_x, 0.35) << tm << "x" << tn << " wave " << wave << " swizzle " << swizzle << " xcds "
                           << xcds << " remap " << remap << ": closed " << closed_x << " direct " << direct_x;
  }
  EXPECT_GT(checked, 100);
  RecordProperty("worst_relative_error", std::to_string(worst));
  RecordProperty("worst_relative_error_per_xcd", std::to_string(worst_x));
}
