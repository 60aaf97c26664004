#include "tunable/dot_interaction/dot_interaction_cost.h"

#include <algorithm>

#include "core/error.h"
#include "tunable/dot_interaction/dot_backward_cost.h"
#include "tune/memory_bounds.h"

namespace hetrec::tune {

namespace {
// Shared memory is interleaved over banks of 4 bytes, as many as it serves bytes per
// clock / 4 (hw/<gpu>.toml memory.shared_bytes_per_clock; CUDA C++ Programming Guide:
// 32 banks of 32 bits).
constexpr int kBankBytes = 4;
constexpr double kUsPerS = 1e6;
constexpr double kHzPerMHz = 1e6;
}  // namespace

VariantSpace dot_forward_space() {
  return {kDotForwardKernel,
          {{"block_threads", {64, 128, 256, 512}, "threads per block"},
           {"samples_per_block", {1, 2, 4, 8}, "samples staged in shared memory per block"},
           {"row_pad", {0, 1}, "floats of padding after each staged row (bank conflicts)"}}};
}

kernels::DotForwardVariant to_dot_variant(const ParameterSet& params) {
  const auto get = [&](const char* name) {
    auto it = params.find(name);
    if (it == params.end())
      throw ConfigError(std::string(kDotForwardKernel) + " parameters: missing '" + name + "' in {" + describe(params) +
                        "}");
    return it->second;
  };
  kernels::DotForwardVariant v;
  v.block_threads = get("block_threads");
  v.samples_per_block = get("samples_per_block");
  v.row_pad = get("row_pad");
  if (params.size() != 3)
    throw ConfigError(std::string(kDotForwardKernel) + " parameters: expected exactly block_threads, "
                      "samples_per_block, row_pad, got {" + describe(params) + "}");
  return v;
}

ParameterSet dot_parameters(const kernels::DotForwardVariant& v) {
  return {{"block_threads", v.block_threads}, {"samples_per_block", v.samples_per_block}, {"row_pad", v.row_pad}};
}

double dot_forward_bytes(const DotForwardWorkload& w) {
  const double per_sample = static_cast<double>(w.shape.num_features) * w.shape.dim + w.shape.dim + w.pairs();
  return static_cast<double>(w.batch) * per_sample * sizeof(float);
}

double dot_forward_flops(const DotForwardWorkload& w) {
  return 2.0 * static_cast<double>(w.batch) * w.pairs() * w.shape.dim;
}

double dot_forward_floor_us(const Hardware& hw, const DotForwardWorkload& w) {
  return hbm_or_fp32_floor_us(hw, dot_forward_bytes(w), dot_forward_flops(w));
}

std::string dot_forward_static_problem(const Hardware& hw, const DotForwardWorkload& w, const ParameterSet& params) {
  const kernels::DotForwardVariant v = to_dot_variant(params);
  const auto max_shared = static_cast<std::size_t>(hw.max_shared_kb_per_block * 1024);
  const std::string problem = kernels::dot_forward_variant_problem(w.shape, v, hw.warp_size, max_shared);
  if (!problem.empty()) return "invalid: " + problem;
  const int banks = static_cast<int>(hw.shared_bytes_per_clock) / kBankBytes;
  if (banks > 0 && (w.shape.dim + v.row_pad) % banks == 0)
    return "bank conflicts: staged rows of " + std::to_string(w.shape.dim + v.row_pad) +
           " floats all start in one bank, so threads reading element k of different rows serialise";
  const int work = v.samples_per_block * std::max(w.pairs(), w.shape.dim);
  if (v.block_threads > work)
    return "idle threads: " + std::to_string(v.block_threads) + " threads per block for " + std::to_string(work) +
           " outputs";
  return "";
}

double dot_forward_predicted_us(const Hardware& hw, const DotForwardWorkload& w, const ParameterSet& params) {
  (void)to_dot_variant(params);
  const double shared_bytes = static_cast<double>(w.batch) * w.pairs() * 2.0 * w.shape.dim * sizeof(float);
  const double shared_per_s = hw.compute_units * hw.shared_bytes_per_clock * hw.clock_mhz * kHzPerMHz;
  return std::max(dot_forward_floor_us(hw, w), shared_bytes / shared_per_s * kUsPerS);
}

double dot_forward_shared_occupancy(const Hardware& hw, const DotForwardWorkload& w, const ParameterSet& params) {
  const kernels::DotForwardVariant v = to_dot_variant(params);
  const double bytes = static_cast<double>(kernels::dot_forward_shared_bytes(w.shape.num_features, w.shape.dim, v));
  const int by_shared = static_cast<int>(hw.shared_kb_per_unit * 1024 / bytes);
  const int by_threads = hw.max_threads_per_unit / v.block_threads;
  return static_cast<double>(std::min(by_shared, by_threads) * v.block_threads) / hw.max_threads_per_unit;
}

void add_dot_interaction_families(std::vector<KernelFamily>& out) {
  out.push_back({kDotForwardKernel, "dot interaction"});
  out.push_back({kDotBackwardKernel, "dot interaction backward"});
}

}  // namespace hetrec::tune
