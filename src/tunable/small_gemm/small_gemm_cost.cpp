#include "tunable/small_gemm/small_gemm_cost.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "tune/memory_bounds.h"
#include "tune/occupancy.h"

namespace hetrec::tune {

namespace {
// The reduce kind's partial sums may add at most this fraction of the rows' bytes: more
// chunks than that make the second pass cost more than the balance they buy.
constexpr double kMaxPartialShare = 0.25;
// The widest vector access (bytes): the alignment a vector of that size needs.
constexpr std::size_t kMaxVectorAlignment = 16;

// The rows kind stages B (narrow x wide floats) in shared memory at the start of every
// block, one dependent 4-byte load from L2 and a shared store per thread and step. Clocks
// per step, fitted on the H200 (bench/results/small-gemm-20261130-selection-dcnv2-fp32-h200.json,
// the 13 x 512 B of the bottom layer's input gradient at batch 1024: 0.17-0.25 us per step
// over 26 to 208 steps at 1.98 GHz).
constexpr double kStagingStepClocks = 400;

// The reduce kind's second pass: one thread per output adds the chunks' partial sums in
// order, a chain of dependent adds whose loads the compiler issues ahead. Clocks per chunk,
// fitted on the H200 (bench/results/small-gemm-20261130-selection-dcnv2-fp32-h200.json, the
// logit layer's weight gradient at batch 131072: 1.5 us more for 256 chunks than for 128;
// from 512 chunks on the first pass slows too).
constexpr double kFinishClocksPerChunk = 32;
// Warp shuffles per SM and clock: CUDA C++ Programming Guide, arithmetic instruction
// throughput (32 results per clock per SM for compute capabilities 5.x to 9.0), the same
// rate as the load/store units'.
constexpr double kShuffleLanesPerUnitPerClock = 32;

using kernels::SmallGemmKind;

double ceil_div(double a, double b) { return static_cast<double>(static_cast<int64_t>((a + b - 1) / b)); }

double partial_bytes(const SmallGemmWorkload& w, const kernels::SmallGemmVariant& v) {
  // written by the first pass, read by the second
  return 2.0 * static_cast<double>(kernels::small_gemm_workspace_floats(w.shape, v)) * sizeof(float);
}

// Threads the problem keeps busy at once, at most.
double working_threads(const SmallGemmWorkload& w, const kernels::SmallGemmVariant& v) {
  const double m = static_cast<double>(w.m);
  switch (w.shape.kind) {
    case SmallGemmKind::rows: return m * v.lanes;
    case SmallGemmKind::outer: return m * ceil_div(w.shape.wide, v.vec);
    case SmallGemmKind::reduce: return static_cast<double>(v.split) * kernels::small_gemm_block_threads(w.shape, v);
  }
  return m;
}
}  // namespace

// occupancy.h's NVIDIA rules where they apply.
double small_gemm_resident_threads_per_unit(const Hardware& hw, const SmallGemmWorkload& w,
                                            const kernels::SmallGemmVariant& v) {
  const int block = kernels::small_gemm_block_threads(w.shape, v);
  if (hw.vendor == Vendor::nvidia) {
    ResourceReport r;
    r.dynamic_shared_bytes = kernels::small_gemm_shared_bytes(w.shape, v);
    return static_cast<double>(occupancy(hw, r, block).blocks_per_unit) * block;
  }
  const double shared = static_cast<double>(kernels::small_gemm_shared_bytes(w.shape, v));
  double blocks = std::floor(static_cast<double>(hw.max_threads_per_unit) / block);
  if (shared > 0) blocks = std::min(blocks, std::floor(hw.shared_kb_per_unit * 1024 / shared));
  return blocks * block;
}


std::vector<SmallGemmLayerGemm> small_gemm_mlp_gemms(const std::string& name, int in, const std::vector<int>& widths,
                                                     bool relu_last, bool input_gradient, DType operand) {
  using kernels::SmallGemmEpilogue;
  std::vector<SmallGemmLayerGemm> out;
  for (std::size_t i = 0; i < widths.size(); ++i) {
    const int o = widths[i];
    const bool relu = i + 1 < widths.size() || relu_last;
    const std::string layer = name + "." + std::to_string(i);
    const int li = static_cast<int>(i);
    const auto add = [&](SmallGemmPass pass, SmallGemmKind kind, int narrow, int wide, bool flag, SmallGemmEpilogue e) {
      const char* what = pass == SmallGemmPass::forward           ? "forward"
                         : pass == SmallGemmPass::weight_gradient ? "weight gradient"
                                                                  : "input gradient";
      kernels::SmallGemmShape s;
      s.kind = kind;
      s.narrow = narrow;
      s.wide = wide;
      s.flag = flag;
      s.operand = operand;
      s.epilogue = e;
      out.push_back({layer + " " + what, li, pass, s});
    };
    const SmallGemmEpilogue fwd = relu ? SmallGemmEpilogue::relu_bias : SmallGemmEpilogue::bias;
    const bool dx = i > 0 || input_gradient;
    if (o <= kernels::kSmallGemmMaxNarrow) {
      add(SmallGemmPass::forward, SmallGemmKind::rows, o, in, true, fwd);
      add(SmallGemmPass::weight_gradient, SmallGemmKind::reduce, o, in, true, SmallGemmEpilogue::none);
      if (dx) add(SmallGemmPass::input_gradient, SmallGemmKind::outer, o, in, false, SmallGemmEpilogue::none);
    } else if (in <= kernels::kSmallGemmMaxNarrow) {
      add(SmallGemmPass::forward, SmallGemmKind::outer, in, o, true, fwd);
      add(SmallGemmPass::weight_gradient, SmallGemmKind::reduce, in, o, false, SmallGemmEpilogue::none);
      if (dx) add(SmallGemmPass::input_gradient, SmallGemmKind::rows, in, o, false, SmallGemmEpilogue::none);
    }
    in = o;
  }
  return out;
}

VariantSpace small_gemm_space(SmallGemmKind kind) {
  switch (kind) {
    case SmallGemmKind::rows:
      return {kSmallGemmKernel,
              {{"vec", {1, 2, 4, 8}, "elements per vector load of A's row"},
               {"lanes", {1, 2, 4, 8, 16, 32}, "threads per row of A (their dots added by shuffles)"},
               {"rows_per_block", {1, 2, 4, 8, 16, 32}, "rows of A per block"},
               {"unroll", {1, 2, 4}, "vectors of the row loaded before the first is used"},
               {"split", {1}, "(reduce only)"}}};
    case SmallGemmKind::outer:
      return {kSmallGemmKernel,
              {{"vec", {1, 2, 4}, "consecutive outputs per thread (one vector store)"},
               {"lanes", {1}, "(rows only)"},
               {"rows_per_block", {1, 2, 4, 8}, "row groups per block"},
               {"unroll", {1, 2, 4, 8}, "rows per thread loaded before the first is used"},
               {"split", {1}, "(reduce only)"}}};
    case SmallGemmKind::reduce:
      return {kSmallGemmKernel,
              {{"vec", {1, 2, 4, 8}, "consecutive wide columns per thread (one vector load)"},
               {"lanes", {1}, "(rows only)"},
               {"rows_per_block", {1, 2, 4, 8}, "row groups per block, added in shared memory"},
               {"unroll", {1, 2, 4}, "rows per thread loaded before the first is used"},
               {"split", {128, 256, 512, 1024, 2048}, "chunks of the batch (first-pass blocks)"}}};
  }
  return {kSmallGemmKernel, {}};
}

kernels::SmallGemmVariant to_small_gemm_variant(const ParameterSet& params) {
  const auto get = [&](const char* name) {
    auto it = params.find(name);
    if (it == params.end())
      throw ConfigError(std::string(kSmallGemmKernel) + " parameters: missing '" + name + "' in {" + describe(params) +
                        "}");
    return it->second;
  };
  kernels::SmallGemmVariant v;
  v.vec = get("vec");
  v.lanes = get("lanes");
  v.rows_per_block = get("rows_per_block");
  v.unroll = get("unroll");
  v.split = get("split");
  if (params.size() != 5)
    throw ConfigError(std::string(kSmallGemmKernel) + " parameters: expected exactly vec, lanes, rows_per_block, "
                      "unroll, split, got {" + describe(params) + "}");
  return v;
}

ParameterSet small_gemm_parameters(const kernels::SmallGemmVariant& v) {
  return {{"vec", v.vec}, {"lanes", v.lanes}, {"rows_per_block", v.rows_per_block}, {"unroll", v.unroll},
          {"split", v.split}};
}

double small_gemm_bytes_in_flight_per_thread(const SmallGemmWorkload& w, const kernels::SmallGemmVariant& v) {
  const double elem = static_cast<double>(dtype_size(w.shape.operand));
  switch (w.shape.kind) {
    case SmallGemmKind::rows: return v.unroll * v.vec * elem;
    // The rows of A loaded before use (the same addresses for the whole row group), and the
    // outputs they become: a thread stores nothing of a row before its load returns.
    case SmallGemmKind::outer: return v.unroll * (w.shape.narrow * elem + v.vec * sizeof(float));
    case SmallGemmKind::reduce: return v.unroll * (v.vec + w.shape.narrow) * elem;
  }
  return elem;
}

double small_gemm_bytes(const SmallGemmWorkload& w) {
  const double elem = static_cast<double>(dtype_size(w.shape.operand));
  const double m = static_cast<double>(w.m), narrow = w.shape.narrow, wide = w.shape.wide;
  const double small_matrix = narrow * wide;  // B (rows, outer) or C (reduce)
  if (w.shape.kind == SmallGemmKind::reduce) return m * (narrow + wide) * elem + small_matrix * sizeof(float);
  const double bias = w.shape.epilogue == kernels::SmallGemmEpilogue::none
                          ? 0.0
                          : (w.shape.kind == SmallGemmKind::rows ? narrow : wide) * sizeof(float);
  // rows: A is m x wide, C m x narrow; outer: A is m x narrow, C m x wide.
  const double a_width = w.shape.kind == SmallGemmKind::rows ? wide : narrow;
  const double c_width = w.shape.kind == SmallGemmKind::rows ? narrow : wide;
  return m * a_width * elem + small_matrix * elem + m * c_width * sizeof(float) + bias;
}

double small_gemm_flops(const SmallGemmWorkload& w) {
  return 2.0 * static_cast<double>(w.m) * w.shape.narrow * w.shape.wide;
}

double small_gemm_intensity(const SmallGemmWorkload& w) { return small_gemm_flops(w) / small_gemm_bytes(w); }

double small_gemm_floor_us(const Hardware& hw, const SmallGemmWorkload& w) {
  return hbm_or_fp32_floor_us(hw, small_gemm_bytes(w), small_gemm_flops(w));
}

std::string small_gemm_static_problem(const Hardware& hw, const SmallGemmWorkload& w, const ParameterSet& params) {
  return small_gemm_static_problem(hw, w, to_small_gemm_variant(params));
}

std::string small_gemm_static_problem(const Hardware& hw, const SmallGemmWorkload& w,
                                      const kernels::SmallGemmVariant& v) {
  const auto max_shared = static_cast<std::size_t>(hw.max_shared_kb_per_block * 1024);
  const std::string problem = kernels::small_gemm_variant_problem(w.shape, v, hw.warp_size, max_shared);
  if (!problem.empty()) return "invalid: " + problem;
  // The engine's operands are contiguous: a row of the vector-accessed matrix (A for rows,
  // C for outer, the wide operand for reduce) is `wide` elements, and a vector may not
  // straddle two rows' alignment.
  const std::size_t elem = w.shape.kind == SmallGemmKind::outer ? sizeof(float) : dtype_size(w.shape.operand);
  const std::size_t align = std::min<std::size_t>(kMaxVectorAlignment, v.vec * elem);
  if ((static_cast<std::size_t>(w.shape.wide) * elem) % align != 0)
    return "misaligned: rows of " + std::to_string(w.shape.wide) + " elements are not whole " +
           std::to_string(align) + "-byte vectors";
  if (w.shape.kind == SmallGemmKind::rows && v.lanes * v.vec > w.shape.wide)
    return "idle lanes: " + std::to_string(v.lanes) + " lanes of " + std::to_string(v.vec) +
           "-element vectors for a row of " + std::to_string(w.shape.wide);
  if (w.shape.kind != SmallGemmKind::rows && v.vec > w.shape.wide)
    return "idle lanes: " + std::to_string(v.vec) + "-element vectors for " + std::to_string(w.shape.wide) +
           " columns";
  if (w.shape.kind == SmallGemmKind::reduce && partial_bytes(w, v) > kMaxPartialShare * small_gemm_bytes(w))
    return "partials: " + std::to_string(v.split) + " chunks move more than a quarter of the rows' bytes again";
  return "";
}

double small_gemm_issue_us(const Hardware& hw, const SmallGemmWorkload& w, const ParameterSet& params) {
  return small_gemm_issue_us(hw, w, to_small_gemm_variant(params));
}

double small_gemm_issue_us(const Hardware& hw, const SmallGemmWorkload& w, const kernels::SmallGemmVariant& v) {
  const double m = static_cast<double>(w.m), narrow = w.shape.narrow, wide = w.shape.wide;
  double ops = 0.0;
  switch (w.shape.kind) {
    case SmallGemmKind::rows:
      // per row: each lane's vector loads of A, per vector one shared read of each of B's N
      // rows, and the lanes' N sums added by log2(lanes) shuffles each
      ops = m * v.lanes * ceil_div(wide, static_cast<double>(v.lanes) * v.vec) * (1.0 + narrow) +
            m * v.lanes * std::log2(static_cast<double>(v.lanes)) * narrow * kLoadLanesPerUnitPerClock /
                kShuffleLanesPerUnitPerClock;
      break;
    case SmallGemmKind::outer:
      // per row and thread: K loads of A, one store
      ops = m * ceil_div(wide, v.vec) * (narrow + 1.0);
      break;
    case SmallGemmKind::reduce:
      // per row and thread: one vector load of the wide operand, `narrow` loads of the narrow one
      ops = m * ceil_div(wide, v.vec) * (narrow + 1.0);
      break;
  }
  const double per_us = hw.compute_units * kLoadLanesPerUnitPerClock * hw.clock_mhz;
  return ops / per_us;
}

double small_gemm_predicted_us(const Hardware& hw, const SmallGemmWorkload& w, const ParameterSet& params) {
  return small_gemm_predicted_us(hw, w, to_small_gemm_variant(params));
}

double small_gemm_shared_read_us(const Hardware& hw, const SmallGemmWorkload& w) {
  if (w.shape.kind != SmallGemmKind::rows || hw.shared_bytes_per_clock <= 0) return 0.0;
  // Every element of A meets the N staged values of its column of B, read from shared
  // memory as fp32 (no credit for lanes of other rows reading the same address).
  const double bytes = static_cast<double>(w.m) * w.shape.wide * w.shape.narrow * sizeof(float);
  return bytes / (hw.shared_bytes_per_clock * hw.compute_units * hw.clock_mhz);
}

double small_gemm_finish_us(const Hardware& hw, const SmallGemmWorkload& w, const kernels::SmallGemmVariant& v) {
  if (w.shape.kind != SmallGemmKind::reduce) return 0.0;
  return v.split * kFinishClocksPerChunk / hw.clock_mhz;
}

double small_gemm_staging_us(const Hardware& hw, const SmallGemmWorkload& w, const kernels::SmallGemmVariant& v) {
  if (w.shape.kind != SmallGemmKind::rows) return 0.0;
  const double elements = static_cast<double>(kernels::small_gemm_shared_bytes(w.shape, v)) / sizeof(float);
  return ceil_div(elements, kernels::small_gemm_block_threads(w.shape, v)) * kStagingStepClocks / hw.clock_mhz;
}

double small_gemm_predicted_us(const Hardware& hw, const SmallGemmWorkload& w, const kernels::SmallGemmVariant& v) {
  const double resident = small_gemm_resident_threads_per_unit(hw, w, v) * hw.compute_units;
  const double threads = std::min(resident, working_threads(w, v));
  const double bytes_per_us = sustained_bytes_per_us(hw, threads, small_gemm_bytes_in_flight_per_thread(w, v));
  const double bytes = small_gemm_bytes(w) + partial_bytes(w, v);
  return small_gemm_staging_us(hw, w, v) + small_gemm_finish_us(hw, w, v) +
         std::max({bytes / bytes_per_us, small_gemm_floor_us(hw, w), small_gemm_issue_us(hw, w, v),
                   small_gemm_shared_read_us(hw, w)});
}

void add_small_gemm_families(std::vector<KernelFamily>& out) {
  out.push_back({kSmallGemmKernel, "small GEMM"});
}

}  // namespace hetrec::tune
