#include "tunable/cross_net/cross_net_cost.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "tune/memory_bounds.h"

namespace hetrec::tune {

namespace {
// The widest word one thread moves per memory instruction (128-bit loads and stores).
constexpr double kMaxAccessBytes = 16;
// Static shared memory a kernel may declare without opting in (CUDA C++ Programming
// Guide: statically allocated shared memory is limited to 48 KB).
constexpr double kStaticSharedLimitBytes = 48 * 1024;
constexpr double kF32 = sizeof(float);
// The smaller batch a backward winner must also serve (tuned batch / this), and how many
// times the built-in variant's predicted time it may take there.
constexpr int64_t kSmallBatchDivisor = 8;
constexpr double kSmallBatchSlowdownLimit = 2.0;

int get(const ParameterSet& params, const char* kernel, const char* name) {
  auto it = params.find(name);
  if (it == params.end())
    throw ConfigError(std::string(kernel) + " parameters: missing '" + name + "' in {" + describe(params) + "}");
  return it->second;
}

double op_bytes(const CrossWorkload& w) { return static_cast<double>(kernels::cross_op_bytes(w.shape.op_type)); }

// Per element: bytes read, bytes written, and the (read, write) arrays with their widths.
double forward_read_bytes(const CrossWorkload& w) { return 2 * kF32 + op_bytes(w); }
double forward_write_bytes(const CrossWorkload& w) {
  return kF32 + (w.shape.op_type == DType::f32 ? 0.0 : op_bytes(w));
}
// The backward's tuned pass (cross_backward_tuned_pass).
kernels::CrossPassTraffic backward_traffic() { return kernels::cross_backward_pass_traffic(cross_backward_tuned_pass()); }
double backward_read_bytes(const CrossWorkload& w) {
  const kernels::CrossPassTraffic t = backward_traffic();
  return t.f32_reads * kF32 + t.op_reads * op_bytes(w);
}
double backward_write_bytes(const CrossWorkload& w) {
  const kernels::CrossPassTraffic t = backward_traffic();
  return t.f32_writes * kF32 + t.op_writes * op_bytes(w);
}

// Memory instructions one thread issues for a vector of `vec` elements of `bytes` each.
double accesses(int vec, double bytes) { return std::max(1.0, std::ceil(vec * bytes / kMaxAccessBytes)); }

// Threads of `block_threads` an SM keeps resident (by the thread limit alone) over all SMs.
double resident_threads(const Hardware& hw, int block_threads) {
  return static_cast<double>(hw.max_threads_per_unit / block_threads) * block_threads * hw.compute_units;
}

double issue_us(const Hardware& hw, double thread_accesses) {
  return thread_accesses / (hw.compute_units * kLoadLanesPerUnitPerClock * hw.clock_mhz);
}
}  // namespace

// ---- forward ----

VariantSpace cross_forward_space() {
  return {kCrossForwardKernel,
          {{"vec", {1, 2, 4, 8}, "elements per access (vector width)"},
           {"items", {1, 2, 4}, "vectors per thread (unroll)"},
           {"block_threads", {128, 256, 512, 1024}, "threads per block"}}};
}

kernels::CrossForwardVariant to_cross_forward_variant(const ParameterSet& params) {
  kernels::CrossForwardVariant v;
  v.vec = get(params, kCrossForwardKernel, "vec");
  v.items = get(params, kCrossForwardKernel, "items");
  v.block_threads = get(params, kCrossForwardKernel, "block_threads");
  if (params.size() != 3)
    throw ConfigError(std::string(kCrossForwardKernel) + " parameters: expected exactly vec, items, block_threads, got {" +
                      describe(params) + "}");
  return v;
}

ParameterSet cross_forward_parameters(const kernels::CrossForwardVariant& v) {
  return {{"vec", v.vec}, {"items", v.items}, {"block_threads", v.block_threads}};
}

double cross_forward_bytes(const CrossWorkload& w) {
  return static_cast<double>(w.elements()) * (forward_read_bytes(w) + forward_write_bytes(w));
}

double cross_forward_floor_us(const Hardware& hw, const CrossWorkload& w) {
  return cross_forward_bytes(w) / hbm_bytes_per_us(hw);
}

std::string cross_forward_static_problem(const Hardware& hw, const CrossWorkload& w, const ParameterSet& params) {
  const kernels::CrossForwardVariant v = to_cross_forward_variant(params);
  const std::string problem = kernels::cross_forward_variant_problem(w.shape, v, hw.warp_size);
  if (!problem.empty()) return "invalid: " + problem;
  if (v.block_threads > hw.max_threads_per_block)
    return "invalid: " + std::to_string(v.block_threads) + " threads per block exceed the device's " +
           std::to_string(hw.max_threads_per_block);
  if (w.shape.width % v.vec != 0)
    return "vector width: " + std::to_string(v.vec) + " elements per access do not divide the row of " +
           std::to_string(w.shape.width) + " (rows would start off a vector boundary)";
  const int64_t vectors = w.elements() / v.vec;
  if (static_cast<int64_t>(v.block_threads) * v.items > vectors)
    return "idle threads: a block covers " + std::to_string(v.block_threads * v.items) + " vectors, the layer has " +
           std::to_string(vectors);
  return "";
}

std::pair<double, double> cross_forward_rank(const Hardware& hw, const CrossWorkload& w, const ParameterSet& params) {
  const kernels::CrossForwardVariant v = to_cross_forward_variant(params);
  const double vectors = static_cast<double>(w.elements()) / v.vec;
  const double threads = std::min(resident_threads(hw, v.block_threads), std::ceil(vectors / v.items));
  // Every vector's loads of the thread's `items` vectors are independent: all in flight.
  const double in_flight = static_cast<double>(v.items) * v.vec * forward_read_bytes(w);
  const double op = op_bytes(w);
  const double per_vector = 2 * accesses(v.vec, kF32) + accesses(v.vec, op) + accesses(v.vec, kF32) +
                            (w.shape.op_type == DType::f32 ? 0.0 : accesses(v.vec, op));
  const double issue = issue_us(hw, vectors * per_vector);
  const double memory = cross_forward_bytes(w) / sustained_bytes_per_us(hw, threads, in_flight);
  return {std::max(memory, issue), issue};
}

// ---- backward ----

kernels::CrossBackwardPass cross_backward_tuned_pass() { return kernels::cross_backward_schedule(3).back(); }

VariantSpace cross_backward_space() {
  return {kCrossBackwardKernel,
          {{"vec", {1, 2, 4}, "consecutive columns per thread (vector width)"},
           {"col_threads", {32, 64, 128, 256}, "threads across the columns of a block"},
           {"row_groups", {1, 2, 4, 8}, "thread groups splitting a chunk's rows (partials staged in shared memory)"},
           {"chunk_rows", {256, 512, 1024}, "rows per block: one chunk of the column sums"}}};
}

kernels::CrossBackwardVariant to_cross_backward_variant(const ParameterSet& params) {
  kernels::CrossBackwardVariant v;
  v.vec = get(params, kCrossBackwardKernel, "vec");
  v.col_threads = get(params, kCrossBackwardKernel, "col_threads");
  v.row_groups = get(params, kCrossBackwardKernel, "row_groups");
  v.chunk_rows = get(params, kCrossBackwardKernel, "chunk_rows");
  if (params.size() != 4)
    throw ConfigError(std::string(kCrossBackwardKernel) +
                      " parameters: expected exactly vec, col_threads, row_groups, chunk_rows, got {" +
                      describe(params) + "}");
  return v;
}

ParameterSet cross_backward_parameters(const kernels::CrossBackwardVariant& v) {
  return {{"vec", v.vec}, {"col_threads", v.col_threads}, {"row_groups", v.row_groups}, {"chunk_rows", v.chunk_rows}};
}

double cross_backward_bytes(const CrossWorkload& w) {
  return static_cast<double>(w.elements()) * (backward_read_bytes(w) + backward_write_bytes(w)) +
         static_cast<double>(w.shape.width) * kF32;
}

double cross_backward_floor_us(const Hardware& hw, const CrossWorkload& w) {
  return cross_backward_bytes(w) / hbm_bytes_per_us(hw);
}

std::string cross_backward_static_problem(const Hardware& hw, const CrossWorkload& w, const ParameterSet& params) {
  const kernels::CrossBackwardVariant v = to_cross_backward_variant(params);
  const std::string problem = kernels::cross_backward_variant_problem(w.shape, v, hw.warp_size);
  if (!problem.empty()) return "invalid: " + problem;
  if (v.block_threads() > hw.max_threads_per_block)
    return "invalid: " + std::to_string(v.block_threads()) + " threads per block exceed the device's " +
           std::to_string(hw.max_threads_per_block);
  if (w.shape.width % v.vec != 0)
    return "vector width: " + std::to_string(v.vec) + " columns per thread do not divide the row of " +
           std::to_string(w.shape.width) + " (every vector would fall back to single elements)";
  if (static_cast<int64_t>(v.col_threads) * v.vec > w.shape.width)
    return "idle threads: a block spans " + std::to_string(v.col_threads * v.vec) + " columns, the row has " +
           std::to_string(w.shape.width);
  const double shared = static_cast<double>(kernels::cross_backward_shared_bytes(v));
  if (shared > std::min(kStaticSharedLimitBytes, hw.max_shared_kb_per_block * 1024))
    return "shared memory: " + std::to_string(static_cast<int64_t>(shared)) +
           " bytes of staged partials per block exceed the static limit";
  // A winner serves every batch of its shape: at an eighth of the tuned batch (the capped
  // config's 16384 beside the full one's 131072) it may not be predicted more than twice
  // as slow as the built-in variant, or a long-chunk, narrow-block variant that wins at
  // the tuned batch starves the smaller one of loads in flight.
  const CrossWorkload small{w.shape, std::max<int64_t>(1, w.batch / kSmallBatchDivisor)};
  const double small_us = cross_backward_rank(hw, small, params).first;
  const double builtin_us =
      cross_backward_rank(hw, small, cross_backward_parameters(kernels::kDefaultCrossBackwardVariant)).first;
  if (small_us > kSmallBatchSlowdownLimit * builtin_us)
    return "small batches: at " + std::to_string(small.batch) + " rows too few threads keep loads in flight (predicted " +
           std::to_string(static_cast<int>(small_us / builtin_us * 100)) + "% of the built-in variant's time)";
  return "";
}

std::pair<double, double> cross_backward_rank(const Hardware& hw, const CrossWorkload& w, const ParameterSet& params) {
  const kernels::CrossBackwardVariant v = to_cross_backward_variant(params);
  const double chunks = std::ceil(static_cast<double>(w.batch) / v.chunk_rows);
  const double column_threads = std::ceil(static_cast<double>(w.shape.width) / v.vec);
  // Only threads with columns load; one row's vectors are in flight at a time (the next
  // row's loads follow this row's stores).
  const double working = column_threads * v.row_groups * chunks;
  const double threads = std::min(resident_threads(hw, v.block_threads()), working);
  const double in_flight = static_cast<double>(v.vec) * backward_read_bytes(w);
  const double partial_bytes = 2.0 * chunks * w.shape.width * kF32;  // written, then read by the combine
  const double op = op_bytes(w);
  const kernels::CrossPassTraffic t = backward_traffic();
  const double per_vector = (t.f32_reads + t.f32_writes) * accesses(v.vec, kF32) +
                            (t.op_reads + t.op_writes) * accesses(v.vec, op);
  const double vectors = static_cast<double>(w.elements()) / v.vec;
  const double issue = issue_us(hw, vectors * per_vector);
  const double memory =
      (cross_backward_bytes(w) + partial_bytes) / sustained_bytes_per_us(hw, threads, in_flight);
  return {std::max(memory, issue), issue};
}

void add_cross_net_families(std::vector<KernelFamily>& out) {
  out.push_back({kCrossForwardKernel, "cross forward"});
  out.push_back({kCrossBackwardKernel, "cross backward"});
}

}  // namespace hetrec::tune
