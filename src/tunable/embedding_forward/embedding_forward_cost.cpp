#include "tunable/embedding_forward/embedding_forward_cost.h"

#include <algorithm>

#include "core/error.h"
#include "tune/memory_bounds.h"

namespace hetrec::tune {

namespace {
}  // namespace

VariantSpace embedding_forward_space() {
  return {kEmbeddingForwardKernel,
          {{"vec_bytes", {4, 8, 16}, "bytes per vector load of a row"},
           {"lanes", {4, 8, 16, 32}, "threads per bag (threads per row)"},
           {"ids_in_flight", {1, 2, 4, 8}, "rows requested before the first is accumulated (unroll)"},
           {"block_threads", {64, 128, 256, 512}, "threads per block"}}};
}

kernels::EmbeddingForwardVariant to_forward_variant(const ParameterSet& params) {
  kernels::EmbeddingForwardVariant v;
  const auto get = [&](const char* name) {
    auto it = params.find(name);
    if (it == params.end())
      throw ConfigError(std::string(kEmbeddingForwardKernel) + " parameters: missing '" + name + "' in {" +
                        describe(params) + "}");
    return it->second;
  };
  v.vec_bytes = get("vec_bytes");
  v.lanes = get("lanes");
  v.ids_in_flight = get("ids_in_flight");
  v.block_threads = get("block_threads");
  if (params.size() != 4)
    throw ConfigError(std::string(kEmbeddingForwardKernel) + " parameters: expected exactly vec_bytes, lanes, "
                      "ids_in_flight, block_threads, got {" + describe(params) + "}");
  return v;
}

ParameterSet forward_parameters(const kernels::EmbeddingForwardVariant& v, const kernels::EmbeddingForwardShape& shape,
                                int warp_size) {
  const kernels::ForwardLaunchLayout l = kernels::forward_launch_layout(shape, v, warp_size);
  return {{"vec_bytes", v.vec_bytes}, {"lanes", l.lanes}, {"ids_in_flight", v.ids_in_flight},
          {"block_threads", v.block_threads}};
}

double embedding_forward_bytes(const EmbeddingForwardWorkload& w) {
  const double row_bytes = static_cast<double>(w.shape.dim) * static_cast<double>(dtype_size(w.shape.row_dtype));
  const double bags = static_cast<double>(w.batch) * w.num_tables;
  const double out = bags * w.shape.dim * static_cast<double>(dtype_size(w.shape.out_dtype));
  const double rows_read = static_cast<double>(w.unique_rows > 0 ? w.unique_rows : w.total_ids);
  return rows_read * row_bytes + static_cast<double>(w.total_ids) * sizeof(int32_t) + out +
         (bags + 1) * sizeof(int32_t);
}

double embedding_forward_floor_us(const Hardware& hw, const EmbeddingForwardWorkload& w) {
  return hbm_floor_us(hw, embedding_forward_bytes(w));
}

std::string embedding_forward_static_problem(const Hardware& hw, const EmbeddingForwardWorkload& w,
                                             const ParameterSet& params) {
  const kernels::EmbeddingForwardVariant v = to_forward_variant(params);
  std::string problem = kernels::forward_variant_problem(w.shape, v, hw.warp_size);
  if (!problem.empty()) return "invalid: " + problem;
  const kernels::ForwardLaunchLayout l = kernels::forward_launch_layout(w.shape, v, hw.warp_size);
  const int row_bytes = w.shape.dim * static_cast<int>(dtype_size(w.shape.row_dtype));
  const int group_bytes = std::min(l.lanes * v.vec_bytes, row_bytes);
  if (group_bytes < kSectorBytes)
    return "coalescing: a lane group reads " + std::to_string(group_bytes) + " contiguous bytes of a row per access, "
           "less than one " + std::to_string(kSectorBytes) + "-byte sector";
  const int vectors = w.shape.dim / l.vec;
  if (l.lanes > vectors)
    return "idle lanes: " + std::to_string(l.lanes - vectors) + " of " + std::to_string(l.lanes) +
           " threads per bag have no part of the " + std::to_string(vectors) + "-vector row";
  return "";
}

double embedding_forward_predicted_us(const Hardware& hw, const EmbeddingForwardWorkload& w, const ParameterSet& params,
                                      double occupancy) {
  const kernels::EmbeddingForwardVariant v = to_forward_variant(params);
  const kernels::ForwardLaunchLayout l = kernels::forward_launch_layout(w.shape, v, hw.warp_size);
  const double bags = static_cast<double>(w.batch) * w.num_tables;
  const double mean_bag = bags > 0 ? static_cast<double>(w.total_ids) / bags : 0.0;
  // A lane has at most min(ids in flight, bag length) rows of `units` vectors in flight.
  const double rows_in_flight = std::max(1.0, std::min<double>(v.ids_in_flight, mean_bag));
  const double bytes_per_thread = rows_in_flight * l.units * v.vec_bytes;
  const double resident_threads = occupancy * hw.max_threads_per_unit * hw.compute_units;
  // Only as many threads as the problem has can be resident.
  const double threads = std::min(resident_threads, bags * l.lanes);
  return std::max(embedding_forward_bytes(w) / sustained_bytes_per_us(hw, threads, bytes_per_thread),
                  embedding_forward_issue_us(hw, w, params));
}

double embedding_forward_issue_us(const Hardware& hw, const EmbeddingForwardWorkload& w, const ParameterSet& params) {
  const kernels::EmbeddingForwardVariant v = to_forward_variant(params);
  const kernels::ForwardLaunchLayout l = kernels::forward_launch_layout(w.shape, v, hw.warp_size);
  // Every lane issues `units` loads per id, whether or not its vectors hold row data.
  const double thread_loads = static_cast<double>(w.total_ids) * l.lanes * l.units;
  const double per_us = hw.compute_units * kLoadLanesPerUnitPerClock * hw.clock_mhz;
  return thread_loads / per_us;
}

void add_embedding_forward_families(std::vector<KernelFamily>& out) {
  out.push_back({kEmbeddingForwardKernel, "embedding forward"});
}

}  // namespace hetrec::tune
