#include "tunable/dot_interaction/dot_backward_cost.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "tune/memory_bounds.h"

namespace hetrec::tune {

namespace {
// Shared memory is interleaved over banks of 4 bytes, as many as it serves bytes per
// clock / 4 (hw/<gpu>.toml memory.shared_bytes_per_clock; CUDA C++ Programming Guide:
// 32 banks of 32 bits).
constexpr int kBankBytes = 4;
constexpr double kUsPerS = 1e6;
constexpr double kHzPerMHz = 1e6;

// Warp-wide accesses needed for `items` consecutive elements.
double warp_accesses(double items, double warp) { return std::ceil(items / warp); }
}  // namespace

VariantSpace dot_backward_space() {
  return {kDotBackwardKernel,
          {{"block_threads", {64, 128, 256, 512}, "threads per block"},
           {"samples_per_block", {1, 2, 4, 8}, "samples staged in shared memory per block"},
           {"row_pad", {0, 1}, "floats of padding after each staged feature and pair-gradient row (bank conflicts)"},
           {"rows_per_thread", {1, 2, 4, 8}, "feature rows whose gradient one thread accumulates per column"}}};
}

kernels::DotBackwardVariant to_dot_backward_variant(const ParameterSet& params) {
  const auto get = [&](const char* name) {
    auto it = params.find(name);
    if (it == params.end())
      throw ConfigError(std::string(kDotBackwardKernel) + " parameters: missing '" + name + "' in {" +
                        describe(params) + "}");
    return it->second;
  };
  kernels::DotBackwardVariant v;
  v.block_threads = get("block_threads");
  v.samples_per_block = get("samples_per_block");
  v.row_pad = get("row_pad");
  v.rows_per_thread = get("rows_per_thread");
  if (params.size() != 4)
    throw ConfigError(std::string(kDotBackwardKernel) + " parameters: expected exactly block_threads, "
                      "samples_per_block, row_pad, rows_per_thread, got {" + describe(params) + "}");
  return v;
}

ParameterSet dot_backward_parameters(const kernels::DotBackwardVariant& v) {
  return {{"block_threads", v.block_threads},
          {"samples_per_block", v.samples_per_block},
          {"row_pad", v.row_pad},
          {"rows_per_thread", v.rows_per_thread}};
}

double dot_backward_bytes(const DotBackwardWorkload& w) {
  const double features = static_cast<double>(w.shape.num_features) * w.shape.dim;
  const double per_sample = features + (w.shape.dim + w.pairs()) + features;  // x read, dout read, dx written
  return static_cast<double>(w.batch) * per_sample * sizeof(float);
}

double dot_backward_flops(const DotBackwardWorkload& w) {
  return 2.0 * static_cast<double>(w.batch) * 2.0 * w.pairs() * w.shape.dim;
}

double dot_backward_floor_us(const Hardware& hw, const DotBackwardWorkload& w) {
  return hbm_or_fp32_floor_us(hw, dot_backward_bytes(w), dot_backward_flops(w));
}

std::string dot_backward_static_problem(const Hardware& hw, const DotBackwardWorkload& w, const ParameterSet& params) {
  const kernels::DotBackwardVariant v = to_dot_backward_variant(params);
  const auto max_shared = static_cast<std::size_t>(hw.max_shared_kb_per_block * 1024);
  const std::string problem = kernels::dot_backward_variant_problem(w.shape, v, hw.warp_size, max_shared);
  if (!problem.empty()) return "invalid: " + problem;
  const int f = w.shape.num_features, d = w.shape.dim;
  const int groups = (f + v.rows_per_thread - 1) / v.rows_per_thread;
  // A warp's consecutive items (column fastest) cover several row groups when D is not a
  // multiple of the warp width; their pair-gradient rows lie n x rows_per_thread x
  // (F + pad) floats apart, and any such distance that is a multiple of the bank count
  // puts two of the warp's reads in one bank.
  const int banks = static_cast<int>(hw.shared_bytes_per_clock) / kBankBytes;
  if (banks > 0 && d % hw.warp_size != 0) {
    const int spanned = std::min(groups, (hw.warp_size - 1) / d + 2);
    const int row_stride = v.rows_per_thread * (f + v.row_pad);
    for (int n = 1; n < spanned; ++n)
      if ((n * row_stride) % banks == 0)
        return "bank conflicts: a warp reads pair-gradient rows of " + std::to_string(spanned) +
               " row groups, " + std::to_string(n * row_stride) + " floats apart, in one bank";
  }
  const int work = v.samples_per_block * std::max(groups * d, w.pairs());
  if (v.block_threads > work)
    return "idle threads: " + std::to_string(v.block_threads) + " threads per block for " + std::to_string(work) +
           " work items";
  return "";
}

double dot_backward_shared_clocks_per_sample(const Hardware& hw, const DotBackwardWorkload& w,
                                             const ParameterSet& params) {
  const kernels::DotBackwardVariant v = to_dot_backward_variant(params);
  const double warp = hw.warp_size;
  const int f = w.shape.num_features, d = w.shape.dim;
  const int groups = (f + v.rows_per_thread - 1) / v.rows_per_thread;
  const double staging = warp_accesses(static_cast<double>(f) * d, warp) +             // features written
                         warp_accesses(static_cast<double>(f) * (f + v.row_pad), warp) +  // matrix zeroed
                         2.0 * warp_accesses(w.pairs(), warp);                          // both triangles filled
  const double warps = warp_accesses(static_cast<double>(groups) * d, warp);
  const double summing = warps * f * (1.0 + v.rows_per_thread);
  return staging + summing;
}

double dot_backward_predicted_us(const Hardware& hw, const DotBackwardWorkload& w, const ParameterSet& params) {
  const double clocks = static_cast<double>(w.batch) * dot_backward_shared_clocks_per_sample(hw, w, params);
  const double clocks_per_s = hw.compute_units * hw.clock_mhz * kHzPerMHz;
  return std::max(dot_backward_floor_us(hw, w), clocks / clocks_per_s * kUsPerS);
}

double dot_backward_shared_occupancy(const Hardware& hw, const DotBackwardWorkload& w, const ParameterSet& params) {
  const kernels::DotBackwardVariant v = to_dot_backward_variant(params);
  const double bytes =
      static_cast<double>(kernels::dot_backward_shared_bytes(w.shape.num_features, w.shape.dim, v));
  const int by_shared = static_cast<int>(hw.shared_kb_per_unit * 1024 / bytes);
  const int by_threads = hw.max_threads_per_unit / v.block_threads;
  return static_cast<double>(std::min(by_shared, by_threads) * v.block_threads) / hw.max_threads_per_unit;
}

}  // namespace hetrec::tune
