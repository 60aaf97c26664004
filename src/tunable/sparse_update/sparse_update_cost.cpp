#include "tunable/sparse_update/sparse_update_cost.h"

#include <algorithm>

#include "core/error.h"
#include "tune/memory_bounds.h"

namespace hetrec::tune {

namespace {
// Per unique row the update reads its first sorted key, its segment start and its
// chunk count (three 4-byte words).
constexpr double kPlanBytesPerRow = 12;
// Per occurrence of a short row: its bag number (4 bytes).
constexpr double kPlanBytesPerOccurrence = 4;

const char* const kParameterNames[] = {"vec_bytes", "lanes", "grads_in_flight", "block_threads", "min_blocks_per_sm"};
}  // namespace

VariantSpace sparse_update_space() {
  return {kSparseUpdateKernel,
          {{"vec_bytes", {4, 8, 16}, "bytes per vector access of a row"},
           {"lanes", {4, 8, 16, 32}, "threads per row"},
           {"grads_in_flight", {1, 2, 4, 8}, "occurrence gradients requested before the first is added (unroll)"},
           {"block_threads", {128, 256, 512}, "threads per block"},
           {"min_blocks_per_sm", {1, 2, 4, 8}, "resident blocks per SM of the launch bound (register cap)"}}};
}

kernels::SparseUpdateVariant to_sparse_update_variant(const ParameterSet& params) {
  const auto get = [&](const char* name) {
    auto it = params.find(name);
    if (it == params.end())
      throw ConfigError(std::string(kSparseUpdateKernel) + " parameters: missing '" + name + "' in {" +
                        describe(params) + "}");
    return it->second;
  };
  kernels::SparseUpdateVariant v;
  v.vec_bytes = get(kParameterNames[0]);
  v.lanes = get(kParameterNames[1]);
  v.grads_in_flight = get(kParameterNames[2]);
  v.block_threads = get(kParameterNames[3]);
  v.min_blocks_per_sm = get(kParameterNames[4]);
  if (params.size() != std::size(kParameterNames))
    throw ConfigError(std::string(kSparseUpdateKernel) + " parameters: expected exactly vec_bytes, lanes, "
                      "grads_in_flight, block_threads, min_blocks_per_sm, got {" + describe(params) + "}");
  return v;
}

ParameterSet sparse_update_parameters(const kernels::SparseUpdateVariant& v, const kernels::SparseUpdateShape& shape,
                                      int warp_size) {
  const kernels::SparseUpdateLayout l = kernels::sparse_update_layout(shape, v, warp_size);
  return {{"vec_bytes", v.vec_bytes},
          {"lanes", l.lanes},
          {"grads_in_flight", v.grads_in_flight},
          {"block_threads", v.block_threads},
          {"min_blocks_per_sm", v.min_blocks_per_sm}};
}

double sparse_update_state_bytes(const kernels::SparseUpdateShape& s) {
  switch (s.optimizer) {
    case kernels::SparseOptimizerKind::sgd: return 0.0;
    case kernels::SparseOptimizerKind::rowwise_adagrad: return sizeof(float);
    case kernels::SparseOptimizerKind::adagrad: return static_cast<double>(s.dim) * sizeof(float);
  }
  return 0.0;
}

double sparse_update_bytes(const SparseUpdateWorkload& w) {
  const double row_bytes = static_cast<double>(w.shape.dim) * static_cast<double>(dtype_size(w.shape.row_dtype));
  const double grad_row_bytes = static_cast<double>(w.shape.dim) * sizeof(float);
  const double rows = static_cast<double>(w.unique_rows);
  return rows * (2.0 * row_bytes + 2.0 * sparse_update_state_bytes(w.shape) + kPlanBytesPerRow) +
         static_cast<double>(w.short_occurrences) * (grad_row_bytes + kPlanBytesPerOccurrence) +
         static_cast<double>(w.long_row_chunks) * grad_row_bytes;
}

double sparse_update_floor_us(const Hardware& hw, const SparseUpdateWorkload& w) {
  return hbm_floor_us(hw, sparse_update_bytes(w));
}

std::string sparse_update_static_problem(const Hardware& hw, const SparseUpdateWorkload& w,
                                         const ParameterSet& params) {
  const kernels::SparseUpdateVariant v = to_sparse_update_variant(params);
  const std::string problem = kernels::sparse_update_variant_problem(w.shape, v, hw.warp_size);
  if (!problem.empty()) return "invalid: " + problem;
  const kernels::SparseUpdateLayout l = kernels::sparse_update_layout(w.shape, v, hw.warp_size);
  const int row_bytes = w.shape.dim * static_cast<int>(dtype_size(w.shape.row_dtype));
  const int group_bytes = std::min(l.lanes * v.vec_bytes, row_bytes);
  if (group_bytes < kSectorBytes)
    return "coalescing: a lane group accesses " + std::to_string(group_bytes) + " contiguous bytes of a row at once, "
           "less than one " + std::to_string(kSectorBytes) + "-byte sector";
  const int vectors = w.shape.dim / l.vec;
  if (l.lanes > vectors)
    return "idle lanes: " + std::to_string(l.lanes - vectors) + " of " + std::to_string(l.lanes) +
           " threads per row have no part of the " + std::to_string(vectors) + "-vector row";
  if (v.block_threads * v.min_blocks_per_sm > hw.max_threads_per_unit)
    return "launch bound: " + std::to_string(v.min_blocks_per_sm) + " resident blocks of " +
           std::to_string(v.block_threads) + " threads exceed the " + std::to_string(hw.max_threads_per_unit) +
           " threads an SM holds";
  return "";
}

double sparse_update_issue_us(const Hardware& hw, const SparseUpdateWorkload& w, const ParameterSet& params) {
  const kernels::SparseUpdateVariant v = to_sparse_update_variant(params);
  const kernels::SparseUpdateLayout l = kernels::sparse_update_layout(w.shape, v, hw.warp_size);
  // Every lane issues `units` vector accesses per gradient row (an occurrence's or a
  // chunk sum), and per touched row a load and a store of the row, and of the
  // element-wise state (Adagrad), whether or not its vectors hold row data. A gradient
  // vector of VEC floats wider than 16 bytes takes several instructions.
  const double grad_words = std::max(1.0, static_cast<double>(l.vec) * sizeof(float) / 16.0);
  const double per_row_accesses =
      2.0 + (w.shape.optimizer == kernels::SparseOptimizerKind::adagrad ? 2.0 * grad_words : 0.0);
  const double thread_accesses =
      static_cast<double>(w.short_occurrences + w.long_row_chunks) * l.lanes * l.units * grad_words +
      static_cast<double>(w.unique_rows) * l.lanes * l.units * per_row_accesses;
  const double per_us = hw.compute_units * kLoadLanesPerUnitPerClock * hw.clock_mhz;
  return thread_accesses / per_us;
}

double sparse_update_predicted_us(const Hardware& hw, const SparseUpdateWorkload& w, const ParameterSet& params) {
  const kernels::SparseUpdateVariant v = to_sparse_update_variant(params);
  const kernels::SparseUpdateLayout l = kernels::sparse_update_layout(w.shape, v, hw.warp_size);
  const double rows = static_cast<double>(std::max<int64_t>(1, w.unique_rows));
  const double mean_len = static_cast<double>(w.short_occurrences) / rows;
  // A lane has at most min(gradients in flight, the row's occurrences) gradient rows of
  // `units` vectors of VEC floats in flight.
  const double grads_in_flight = std::max(1.0, std::min<double>(v.grads_in_flight, mean_len));
  const double bytes_per_thread = grads_in_flight * l.units * l.vec * sizeof(float);
  // The launch bound guarantees this many resident threads (when the variant compiles
  // without spills); only as many as the problem has can be resident.
  const double resident = std::min<double>(hw.max_threads_per_unit, v.block_threads * v.min_blocks_per_sm) *
                          hw.compute_units;
  const double threads = std::min(resident, rows * l.lanes);
  return std::max(sparse_update_bytes(w) / sustained_bytes_per_us(hw, threads, bytes_per_thread),
                  sparse_update_issue_us(hw, w, params));
}

void add_sparse_update_families(std::vector<KernelFamily>& out) {
  out.push_back({kSparseUpdateKernel, "embedding sparse update"});
}

}  // namespace hetrec::tune
