#include "gemm_perf/gemm_model.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "gemm_perf/gemm_raster.h"

namespace hetrec::inline gemm_perf {

namespace {

// Cache sizes are quoted in binary megabytes (MiB) by the vendors' documents.
constexpr double kBytesPerCacheMb = 1024.0 * 1024.0;
constexpr double kBytesPerKb = 1024.0;
constexpr double kBytesPerTb = 1e12;
constexpr double kFlopsPerTflop = 1e12;
constexpr double kHzPerMhz = 1e6;
constexpr double kUsPerS = 1e6;
constexpr double kUsPerNs = 1e-3;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

GemmKernelTraits reject(GemmKernelTraits t, std::string why) {
  t.feasible = false;
  t.infeasible_reason = std::move(why);
  return t;
}

std::string dims(int a, int b) { return std::to_string(a) + "x" + std::to_string(b); }

// A configuration naming the 1 x 1 x 1 "instruction" is a SIMT kernel (one FMA per thread).
bool is_simt_shape(const GemmConfig& c) { return c.inst_m == 1 && c.inst_n == 1 && c.inst_k == 1; }

// Operand traffic of one sub-problem (one batch element, one K slice) through a cache of
// `capacity` bytes, given the panels one wave touches. `slow` is the operand whose panels
// stay while consecutive waves move along the other one (A for along_n). `*_need` is what
// the cache must fetch at least once: the whole operand for the GPU, only the rows or
// columns its own tiles touch for one XCD.
struct OperandTraffic {
  double slow = 0.0;
  double fast = 0.0;
};

OperandTraffic operand_traffic(double capacity, double waves, double slow_count, double slow_panel,
                               double slow_need, double fast_count, double fast_panel, double fast_need) {
  OperandTraffic t;
  const double wave_set = slow_count * slow_panel + fast_count * fast_panel;
  // Slow panels are reused by the next wave when the wave's working set stays resident.
  t.slow = wave_set <= capacity ? slow_need : waves * slow_count * slow_panel;
  // Fast panels come back only if all of them fit beside the current slow panels.
  t.fast = fast_need + slow_count * slow_panel <= capacity ? fast_need : waves * fast_count * fast_panel;
  t.slow = std::max(t.slow, slow_need);
  t.fast = std::max(t.fast, fast_need);
  return t;
}

}  // namespace

std::string_view limiter_name(GemmLimiter l) {
  switch (l) {
    case GemmLimiter::math:
      return "math";
    case GemmLimiter::shared_memory:
      return "shared memory";
    case GemmLimiter::l2:
      return "L2";
    case GemmLimiter::latency:
      return "load latency";
    case GemmLimiter::dram:
      return "HBM";
    case GemmLimiter::llc:
      return "LLC";
    case GemmLimiter::overhead:
      return "launch/tile overhead";
  }
  return "?";
}

GemmKernelTraits gemm_kernel_traits(const Hardware& hw, const GemmModelParams& params,
                                    MatrixPrecision precision, const GemmConfig& c) {
  GemmKernelTraits t;
  t.precision = precision;
  if (c.tile_m < 1 || c.tile_n < 1 || c.tile_k < 1 || c.inst_m < 1 || c.inst_n < 1 || c.inst_k < 1 ||
      c.warps_m < 1 || c.warps_n < 1 || c.cluster_m < 1 || c.cluster_n < 1)
    return reject(t, "tile, instruction, warp and cluster sizes must be positive");
  if (c.stages < 1) return reject(t, "stages must be at least 1");
  if (c.tile_k % c.inst_k != 0)
    return reject(t, "tile_k " + std::to_string(c.tile_k) + " is not a multiple of the instruction's k " +
                         std::to_string(c.inst_k));
  if (c.swizzle < 1) return reject(t, "swizzle must be at least 1");
  if ((c.decomposition == GemmDecomposition::split_k) != (c.split_k > 1))
    return reject(t, "split_k must be > 1 exactly when the decomposition is split_k");
  if (c.cluster_m * c.cluster_n > hw.max_cluster_size)
    return reject(t, "cluster " + dims(c.cluster_m, c.cluster_n) + " exceeds the " +
                         std::to_string(hw.max_cluster_size) + " CTAs " + hw.name + " allows");

  for (std::size_t i = 0; i < hw.matrix_instructions.size(); ++i) {
    const MatrixInstruction& mi = hw.matrix_instructions[i];
    if (mi.precision == precision && mi.m == c.inst_m && mi.k == c.inst_k && mi.allows_n(c.inst_n)) {
      t.instruction = static_cast<int>(i);
      break;
    }
  }
  if (t.instruction < 0 && is_simt_shape(c) && c.family >= 0) {
    // A library family's SIMT kernel computes in fp32 on the vector pipes whatever its
    // operand type (16-bit and TF32-allowed inputs are converted on load), so it issues
    // the fp32 FMA. The model's own SIMT candidates are fp32 kernels only.
    for (std::size_t i = 0; i < hw.matrix_instructions.size(); ++i) {
      const MatrixInstruction& mi = hw.matrix_instructions[i];
      if (mi.precision == MatrixPrecision::fp32 && mi.scope == IssueScope::warp && mi.m == 1 && mi.k == 1 &&
          mi.allows_n(1)) {
        t.instruction = static_cast<int>(i);
        break;
      }
    }
  }
  if (t.instruction < 0)
    return reject(t, "no " + std::string(precision_name(precision)) + " instruction " +
                         dims(c.inst_m, c.inst_n) + "x" + std::to_string(c.inst_k) + " on " + hw.name);
  const MatrixInstruction& mi = hw.matrix_instructions[t.instruction];
  t.pipe = mi.precision;
  t.k_major_only = mi.k_major_only;
  t.pair = mi.ctas;
  t.a_bytes = t.b_bytes = precision_operand_bytes(precision);

  double feed_bytes = 0.0;  // shared memory -> matrix units, per iteration per CTA
  switch (mi.scope) {
    case IssueScope::warp: {
      if (c.tile_m % c.warps_m != 0 || c.tile_n % c.warps_n != 0)
        return reject(t, "tile does not divide over the warp layout");
      const int wm = c.tile_m / c.warps_m, wn = c.tile_n / c.warps_n;
      if (wm % c.inst_m != 0 || wn % c.inst_n != 0)
        return reject(t, "warp tile " + dims(wm, wn) + " is not a multiple of the instruction");
      t.threads_per_cta = c.warps_m * c.warps_n * hw.warp_size;
      // Each warp loads its A rows and B columns into registers once per k.
      feed_bytes = double(c.warps_m) * c.warps_n * (wm * t.a_bytes + wn * t.b_bytes) * c.tile_k;
      break;
    }
    case IssueScope::warpgroup: {
      if (c.warps_m % kWarpsPerWarpgroup != 0)
        return reject(t, "warpgroup instructions need warps_m to be a multiple of 4");
      const int groups_m = c.warps_m / kWarpsPerWarpgroup;
      if (c.tile_m % groups_m != 0 || c.tile_n % c.warps_n != 0)
        return reject(t, "tile does not divide over the warpgroup layout");
      const int gm = c.tile_m / groups_m, gn = c.tile_n / c.warps_n;
      if (gm % c.inst_m != 0 || gn % c.inst_n != 0)
        return reject(t, "warpgroup tile " + dims(gm, gn) + " is not a multiple of the instruction");
      t.threads_per_cta = c.warps_m * c.warps_n * hw.warp_size + kHopperProducerThreads;
      // Every instruction reads both operands from shared memory.
      const double instructions = double(gm / c.inst_m) * (gn / c.inst_n) * groups_m * c.warps_n;
      feed_bytes = instructions * (c.inst_m * t.a_bytes + c.inst_n * t.b_bytes) * c.tile_k;
      break;
    }
    case IssueScope::cta: {
      if (c.tile_m * t.pair != c.inst_m)
        return reject(t, "a CTA-wide instruction of m " + std::to_string(c.inst_m) + " needs tile_m " +
                             std::to_string(c.inst_m / t.pair));
      if (c.tile_n % c.inst_n != 0 || c.tile_n % t.pair != 0)
        return reject(t, "tile_n is not a multiple of the instruction's n");
      if (c.cluster_m % t.pair != 0) return reject(t, "a CTA-pair instruction needs cluster_m even");
      if (hw.tensor_memory_kb_per_unit <= 0.0)
        return reject(t, "CTA-wide instructions accumulate in tensor memory, which " + hw.name + " lacks");
      t.threads_per_cta = (c.warps_m * c.warps_n + kBlackwellControlWarps) * hw.warp_size;
      // Each instruction reads this CTA's A rows and its share of the B columns.
      feed_bytes = double(c.tile_n / c.inst_n) *
                   (c.tile_m * t.a_bytes + double(c.tile_n / t.pair) * t.b_bytes) * c.tile_k;
      break;
    }
  }
  if (t.threads_per_cta > hw.max_threads_per_block)
    return reject(t, std::to_string(t.threads_per_cta) + " threads exceed the block limit of " +
                         std::to_string(hw.max_threads_per_block));

  const double stage_bytes = c.tile_k * (c.tile_m * t.a_bytes + double(c.tile_n / t.pair) * t.b_bytes);
  t.smem_bytes_per_cta = c.stages * stage_bytes;
  const double block_limit = hw.max_shared_kb_per_block * kBytesPerKb;
  if (t.smem_bytes_per_cta > block_limit)
    return reject(t, std::to_string(c.stages) + " stages need " +
                         std::to_string(int64_t(t.smem_bytes_per_cta / kBytesPerKb)) +
                         " KB of shared memory; a block may use " +
                         std::to_string(int64_t(hw.max_shared_kb_per_block)) + " KB");
  // What a unit has beyond the per-block maximum is reserved per resident block (CUDA: 1 KB).
  const double reserve_per_block = (hw.shared_kb_per_unit - hw.max_shared_kb_per_block) * kBytesPerKb;
  const int ctas_by_smem =
      int(std::floor(hw.shared_kb_per_unit * kBytesPerKb / (t.smem_bytes_per_cta + reserve_per_block)));
  t.accumulator_bytes = double(c.tile_m) * c.tile_n * kAccumulatorBytes;
  const double register_share = mi.scope == IssueScope::warpgroup ? kMaxWarpSpecialisedAccumulatorRegisterShare
                                                                  : kMaxAccumulatorRegisterShare;
  const double accumulator_limit = mi.scope == IssueScope::cta
                                       ? hw.tensor_memory_kb_per_unit * kBytesPerKb
                                       : hw.register_file_kb_per_unit * kBytesPerKb * register_share;
  if (t.accumulator_bytes > accumulator_limit)
    return reject(t, "fp32 accumulators of a " + dims(c.tile_m, c.tile_n) + " tile do not fit in " +
                         (mi.scope == IssueScope::cta ? "tensor memory" : "their share of the register file"));
  const int ctas_by_accumulators = int(std::floor(accumulator_limit / t.accumulator_bytes));
  const int ctas_by_threads = hw.max_threads_per_unit / t.threads_per_cta;
  t.ctas_per_unit = std::min({ctas_by_smem, ctas_by_accumulators, ctas_by_threads});
  if (t.ctas_per_unit < 1) return reject(t, "not one CTA fits on a unit");

  // The previous generation's warp-level instruction, where the GPU has a wider one for the
  // same pipe, runs at its fitted share of the pipe's rate.
  t.legacy_instruction = mi.scope == IssueScope::warp && mi.m > 1 &&
                         std::any_of(hw.matrix_instructions.begin(), hw.matrix_instructions.end(),
                                     [&](const MatrixInstruction& o) {
                                       return o.precision == mi.precision && o.scope != IssueScope::warp;
                                     });
  // Datasheet rates assume the boost clock; where a clock under a dense GEMM is published,
  // the whole unit (matrix pipe, shared memory, L2) runs at that instead.
  const double clock_share = hw.matrix_clock_share(t.pipe);
  const double unit_flops_per_s = hw.dense_tflops_for(t.pipe) * kFlopsPerTflop / hw.compute_units * clock_share *
                                  params.matrix_efficiency.of(t.pipe) *
                                  (t.legacy_instruction ? params.legacy_instruction_efficiency : 1.0);
  const double clock_hz = hw.clock_mhz * clock_share * kHzPerMhz;
  t.iter_math_us = 2.0 * c.tile_m * c.tile_n * c.tile_k / unit_flops_per_s * kUsPerS;
  // A SIMT thread's fragment loads and loop share its scheduler's issue with the FMAs.
  t.simt = mi.scope == IssueScope::warp && mi.m == 1;
  if (t.simt) t.iter_math_us /= simt_issue_share(c, hw.warp_size);
  t.iter_feed_us =
      feed_bytes / (hw.shared_bytes_per_clock * clock_hz * params.shared_memory_efficiency) * kUsPerS;
  // What the unit receives from the L2 per iteration: its whole A and B tiles (a CTA pair's
  // instruction splits B between the two CTAs). Cluster multicast reads a tile from the L2
  // once for several CTAs, but each CTA's shared memory still receives all of it, and the
  // per-unit rate bounds what a unit receives; the L2's aggregate output, which multicast
  // does save, is not bounded separately. (Crediting multicast here made the model choose
  // 4- and 8-CTA clusters whose measured times differ from 1-CTA tiles' by under 5%.)
  const double l2_bytes = c.tile_k * (c.tile_m * t.a_bytes + double(c.tile_n / t.pair) * t.b_bytes);
  // The rate depends on the load path: TMA-fed (warpgroup, CTA scope), SIMT (through each
  // thread's registers) or asynchronous copies (the other warp-scope kernels).
  const double l2_rate_factor = mi.scope != IssueScope::warp ? params.tma_l2_rate_factor
                                : t.simt                     ? params.simt_l2_rate_factor
                                                             : 1.0;
  t.iter_l2_us = l2_bytes / (params.l2_bytes_per_clock_per_unit * l2_rate_factor * clock_hz) * kUsPerS;
  // Loads in flight per CTA: all stages but the one being computed on. A single-stage kernel
  // still prefetches the next K tile into registers while it computes on shared memory.
  const int loads_in_flight = std::max(1, c.stages - 1);
  t.iter_latency_us = params.loaded_latency_ns * kUsPerNs / (double(loads_in_flight) * t.ctas_per_unit);
  // A library kernel family's main loop runs at its fitted share of the modelled speed.
  const double family = params.family_factor(c.family, c.family_variant);
  t.iter_math_us /= family;
  t.iter_feed_us /= family;
  t.iter_l2_us /= family;
  t.iter_latency_us /= family;
  t.iter_us = std::max({t.iter_math_us, t.iter_feed_us, t.iter_l2_us, t.iter_latency_us});
  t.fill_us = params.loaded_latency_ns * kUsPerNs;
  if (mi.scope != IssueScope::warp) t.setup_us = params.async_kernel_setup_us;
  t.math_warps = c.warps_m * c.warps_n;
  t.warp_scope = mi.scope == IssueScope::warp;
  t.feasible = true;
  return t;
}

double simt_issue_share(const GemmConfig& c, int warp_size) {
  const double fragment = double(c.tile_m / c.warps_m) * double(c.tile_n / c.warps_n) / warp_size;
  if (!(fragment >= 1.0)) return 1.0;
  // The squarest power-of-two split of the fragment (fewest loads).
  const double tm = std::exp2(std::floor(std::log2(std::sqrt(fragment))));
  const double tn = fragment / tm;
  const double loads = std::ceil(tm / kSimtFloatsPerLoad) + std::ceil(tn / kSimtFloatsPerLoad);
  return fragment / (fragment + loads + kSimtExtraIssuesPerK);
}

std::string gemm_alignment_block(const GemmProblem& p, const GemmKernelTraits& t) {
  if (t.warp_scope || operands_fully_aligned(p)) return {};
  return "its TMA loads need rows aligned to " + std::to_string(kFullOperandAlignment) +
         " bytes; A's rows are aligned to " + std::to_string(p.a_alignment) + " and B's to " +
         std::to_string(p.b_alignment);
}

double gemm_narrow_load_factor(const Hardware& hw, const GemmProblem& p, const GemmKernelTraits& t) {
  if (hw.vendor != Vendor::nvidia || !t.warp_scope || t.simt || operands_fully_aligned(p)) return 1.0;
  const int copy = std::min({p.a_alignment, p.b_alignment, kNarrowCopyBytes});
  return double(kFullOperandAlignment) / double(copy);
}

double gemm_compulsory_bytes(const GemmProblem& p, double a_bytes, double b_bytes) {
  const double m = double(p.m), n = double(p.n), k = double(p.k), batch = double(p.batch);
  const double c_bytes = double(dtype_size(p.c_type));
  double bytes = batch * (m * k * a_bytes + k * n * b_bytes + m * n * c_bytes * (p.accumulate ? 2.0 : 1.0));
  if (p.epilogue != GemmEpilogue::none) bytes += n * c_bytes;
  if (p.fp8_scaling == Fp8Scaling::per_row_col) bytes += batch * (m + n) * kScaleBytes;
  return bytes;
}

double gemm_split_k_partial_bytes(const GemmProblem& p, const GemmConfig& c) {
  return c.reduction == GemmReduction::workspace_output ? double(dtype_size(p.c_type)) : kAccumulatorBytes;
}

double gemm_hbm_bytes_per_us(const Hardware& hw, const GemmModelParams& params) {
  return hw.hbm_tbs * kBytesPerTb * params.hbm_efficiency / kUsPerS;
}

GemmSchedule schedule_gemm(const Hardware& hw, const GemmModelParams& params, const GemmProblem& p,
                           const GemmConfig& c, const GemmKernelTraits& t) {
  GemmSchedule s;
  s.tiles_m = round_up(ceil_div(p.m, c.tile_m), c.cluster_m);
  s.tiles_n = round_up(ceil_div(p.n, c.tile_n), c.cluster_n);
  s.tiles = s.tiles_m * s.tiles_n * p.batch;
  s.k_iters = ceil_div(p.k, c.tile_k);
  // The units the grid can use at once: all of them, or fewer where clusters do not fill
  // every GPC.
  const int64_t units = hw.units_for_clusters(c.cluster_m * c.cluster_n, t.ctas_per_unit);
  const int64_t units_per_xcd = units / hw.xcds;
  const bool stream_k = c.decomposition == GemmDecomposition::stream_k;
  double tiles_on_busiest_unit = 0.0;
  if (stream_k) {
    const int64_t total_iters = s.tiles * s.k_iters;
    s.work_units = std::min<int64_t>(units * t.ctas_per_unit, total_iters);
    s.iters_per_work = ceil_div(total_iters, s.work_units);
    s.iters_on_busiest_unit = double(ceil_div(total_iters, units));
    s.work_per_unit = s.iters_on_busiest_unit / double(s.k_iters);
    // A unit's share of the iterations touches at most one partial tile at each end.
    tiles_on_busiest_unit = std::min(double(s.tiles), double(ceil_div(s.tiles, units)) + 1.0);
  } else {
    // Every slice is launched, even one whose share of K is empty: it still writes its
    // partial (or takes its turn in D), and the reduction still reads it.
    s.slices = c.decomposition == GemmDecomposition::split_k ? int64_t(c.split_k) : 1;
    s.work_units = s.tiles * s.slices;
    s.iters_per_work = ceil_div(s.k_iters, s.slices);
    // Workgroups are dealt over the XCDs first (round robin or in runs: the same counts),
    // then over each XCD's units; the busiest unit sets the time (wave quantisation).
    const int64_t per_xcd = ceil_div(s.work_units, hw.xcds);
    s.work_per_unit = double(ceil_div(per_xcd, units_per_xcd));
    s.iters_on_busiest_unit = s.work_per_unit * double(s.iters_per_work);
    tiles_on_busiest_unit = s.work_per_unit;
  }
  s.units_busy = double(std::min(units, s.work_units));
  const bool split_k = s.slices > 1;
  // Split-K through a workspace: partials and a reduction kernel; in place: the slices of a
  // tile add into D in turn.
  const bool in_place = split_k && c.reduction == GemmReduction::in_place;
  const bool workspace = split_k && !in_place;

  // A grid smaller than the resident slots leaves each unit fewer CTAs: fewer loads in
  // flight, and for warp-scope kernels fewer warps than the unit has issue slots.
  s.resident_ctas = std::min(double(t.ctas_per_unit),
                             stream_k ? double(ceil_div(s.work_units, units)) : s.work_per_unit);
  if (t.warp_scope)
    s.issue_share = std::min(1.0, s.resident_ctas * t.math_warps / double(kIssueSlotsPerUnit));
  s.iter_math_us = t.iter_math_us / s.issue_share;
  s.iter_feed_us = t.iter_feed_us / s.issue_share;
  s.iter_latency_us = t.iter_latency_us * t.ctas_per_unit / s.resident_ctas;
  s.iter_l2_us = t.iter_l2_us * gemm_narrow_load_factor(hw, p, t);
  s.iter_us = std::max({s.iter_math_us, s.iter_feed_us, s.iter_l2_us, s.iter_latency_us});

  // Epilogue of one tile: store (and read C), plus a few vector operations per element.
  const double c_bytes = double(dtype_size(p.c_type));
  const double partial_bytes = gemm_split_k_partial_bytes(p, c);
  const double tile_elems = double(c.tile_m) * c.tile_n;
  double out_bytes = tile_elems * (workspace ? partial_bytes : c_bytes);
  double ops = 0.0;
  if (!workspace) {  // a workspace holds raw partials; the reduction kernel runs the epilogue
    ops = kEpilogueConvertOps;
    if (p.epilogue != GemmEpilogue::none) ops += kEpilogueBiasOps;
    if (p.epilogue == GemmEpilogue::bias_relu) ops += kEpilogueReluOps;
    if (p.fp8_scaling != Fp8Scaling::none) ops += kEpilogueScaleOps;
    if (p.accumulate) ops += kEpilogueAccumulateOps, out_bytes += tile_elems * c_bytes;
    if (in_place) out_bytes += tile_elems * c_bytes;  // the slices before it, read back
  }
  const double unit_hbm_bytes_per_us = gemm_hbm_bytes_per_us(hw, params) / s.units_busy;
  const double unit_vector_ops_per_us =
      hw.dense_tflops.fp32 * kFlopsPerTflop / kFlopsPerFma / double(units) / kUsPerS;
  s.epilogue_us = out_bytes / unit_hbm_bytes_per_us + tile_elems * ops / unit_vector_ops_per_us;

  // Pipeline fill and epilogue of every tile, of which `exposure` is not hidden by other
  // work; the first fill and the last epilogue are never hidden.
  const double per_tile = t.fill_us + s.epilogue_us;
  const double exposed = params.tile_overhead_exposure / t.ctas_per_unit;
  s.tile_overhead_us = tiles_on_busiest_unit * exposed * per_tile + (1.0 - exposed) * per_tile;
  if (stream_k && s.tiles % s.work_units != 0) {
    // Tiles do not divide evenly over the persistent CTAs, so some are cut between two:
    // one writes fp32 partials, the other waits for and reads them.
    s.fixup_us = 2.0 * tile_elems * kAccumulatorBytes / unit_hbm_bytes_per_us + t.fill_us;
  }
  if (in_place) {
    // The slices of a tile finish together and add into D one after another: the last waits
    // for the others' read-modify-write of the tile and the hand-over through a counter.
    s.fixup_us = double(s.slices - 1) * (2.0 * tile_elems * c_bytes / unit_hbm_bytes_per_us + t.fill_us);
  }
  s.unit_us = s.iters_on_busiest_unit * s.iter_us + s.tile_overhead_us + s.fixup_us;

  const double m = double(p.m), n = double(p.n), k = double(p.k), batch = double(p.batch);
  s.compulsory_bytes = gemm_compulsory_bytes(p, t.a_bytes, t.b_bytes);

  if (workspace) {
    const double bytes =
        batch * m * n * (double(s.slices) * partial_bytes + c_bytes * (p.accumulate ? 2.0 : 1.0));
    s.reduction_us = bytes / gemm_hbm_bytes_per_us(hw, params) + params.launch_overhead_us;
  }
  if (t.k_major_only) {
    // Operands stored with M (A) or N (B) contiguous are transposed first: read + write.
    if (p.trans_a)
      s.transpose_us +=
          2.0 * batch * m * k * t.a_bytes / gemm_hbm_bytes_per_us(hw, params) + params.launch_overhead_us;
    if (!p.trans_b)
      s.transpose_us +=
          2.0 * batch * k * n * t.b_bytes / gemm_hbm_bytes_per_us(hw, params) + params.launch_overhead_us;
  }
  s.padded_flops = double(s.tiles) * double(s.k_iters) * 2.0 * c.tile_m * c.tile_n * c.tile_k;
  const double compulsory_us = s.compulsory_bytes / gemm_hbm_bytes_per_us(hw, params);
  s.lower_bound_us = params.launch_overhead_us + t.setup_us + std::max(s.unit_us, compulsory_us) +
                     s.reduction_us + s.transpose_us;
  return s;
}

GemmEstimate finish_gemm_estimate(const Hardware& hw, const GemmModelParams& params, const GemmProblem& p,
                                  const GemmConfig& c, const GemmKernelTraits& t, const GemmSchedule& s) {
  GemmEstimate e;
  const double m = double(p.m), n = double(p.n), batch = double(p.batch);
  const double c_bytes = double(dtype_size(p.c_type));
  const double slices = double(s.slices);
  const double k_slice = double(p.k) / slices;
  const double tm = double(s.tiles_m), tn = double(s.tiles_n);
  const double a_sub = m * k_slice * t.a_bytes, b_sub = n * k_slice * t.b_bytes;
  const double a_panel = a_sub / tm, b_panel = b_sub / tn;
  const double slots = double(hw.units_for_clusters(c.cluster_m * c.cluster_n, t.ctas_per_unit)) * t.ctas_per_unit;
  const double wave = std::min(slots, tm * tn);
  const double waves = tm * tn / wave;
  WaveFootprint fp;
  if (c.decomposition == GemmDecomposition::stream_k) {
    // Each persistent CTA walks its own contiguous range of iterations, so the tiles in
    // flight at one time are spread evenly over the whole grid, not consecutive.
    fp.rows = std::min(tm, wave), fp.cols = std::min(tn, wave);
    const double per_xcd = std::max(1.0, wave / hw.xcds);
    fp.rows_per_xcd = std::min(fp.rows, per_xcd), fp.cols_per_xcd = std::min(fp.cols, per_xcd);
  } else {
    fp = wave_footprint(s.tiles_m, s.tiles_n, wave, c.raster, c.swizzle, hw.xcds, c.xcd_remap);
  }
  const bool along_n = c.raster == GemmRaster::along_n;

  // Whole GPU: HBM behind the L2 (NVIDIA) or behind the memory-side LLC (AMD).
  const double dram_capacity = hw.llc_mb > 0.0 ? hw.llc_mb * kBytesPerCacheMb * params.llc_usable_fraction
                                               : hw.l2_mb * kBytesPerCacheMb * params.l2_usable_fraction;
  OperandTraffic g =
      along_n ? operand_traffic(dram_capacity, waves, fp.rows, a_panel, a_sub, fp.cols, b_panel, b_sub)
              : operand_traffic(dram_capacity, waves, fp.cols, b_panel, b_sub, fp.rows, a_panel, a_sub);
  const bool split_k = s.slices > 1;
  const bool in_place = split_k && c.reduction == GemmReduction::in_place;
  double out_bytes = batch * m * n * c_bytes * (p.accumulate ? 2.0 : 1.0);
  if (split_k && !in_place) out_bytes = batch * m * n * slices * gemm_split_k_partial_bytes(p, c);
  // In place, each slice after the first reads D and writes it back.
  if (in_place) out_bytes += batch * m * n * c_bytes * 2.0 * (slices - 1.0);
  // Stream-K: about one cut tile per persistent CTA.
  if (c.decomposition == GemmDecomposition::stream_k && s.fixup_us > 0.0)
    out_bytes +=
        std::min(double(s.tiles), double(s.work_units)) * 2.0 * c.tile_m * c.tile_n * kAccumulatorBytes;
  e.dram_bytes = std::max(s.compulsory_bytes, batch * slices * (g.slow + g.fast) + out_bytes);
  e.dram_us = e.dram_bytes / gemm_hbm_bytes_per_us(hw, params);

  if (hw.xcds > 1 && hw.llc_mb > 0.0) {
    // Each XCD's L2 fetches the panels its own tiles touch from the LLC.
    const double xcd_capacity = hw.l2_mb_per_xcd() * kBytesPerCacheMb * params.l2_usable_fraction;
    const double a_need = a_sub * fp.rows_per_xcd / fp.rows, b_need = b_sub * fp.cols_per_xcd / fp.cols;
    OperandTraffic x = along_n ? operand_traffic(xcd_capacity, waves, fp.rows_per_xcd, a_panel, a_need,
                                                 fp.cols_per_xcd, b_panel, b_need)
                               : operand_traffic(xcd_capacity, waves, fp.cols_per_xcd, b_panel, b_need,
                                                 fp.rows_per_xcd, a_panel, a_need);
    e.llc_bytes = std::max(e.dram_bytes, batch * slices * hw.xcds * (x.slow + x.fast) + out_bytes);
    if (hw.llc_tbs > 0.0)
      e.llc_us = e.llc_bytes / (hw.llc_tbs * kBytesPerTb * params.llc_efficiency / kUsPerS);
  }

  const double kernel_us = std::max({s.unit_us, e.dram_us, e.llc_us});
  e.launch_us = params.launch_overhead_us;
  // The kernel's start-up comes before its first load: it adds to whichever bound limits.
  e.setup_us = t.setup_us;
  e.time_us = e.launch_us + e.setup_us + kernel_us + s.reduction_us + s.transpose_us;
  e.tflops = p.flops() / (e.time_us / kUsPerS) / kFlopsPerTflop;

  e.tiles = s.tiles;
  e.work_units = s.work_units;
  e.waves = s.work_per_unit;
  e.ctas_per_unit = t.ctas_per_unit;
  e.padding_efficiency = p.flops() / s.padded_flops;
  e.unit_us = s.unit_us;
  e.math_us = s.iters_on_busiest_unit * s.iter_math_us;
  e.feed_us = s.iters_on_busiest_unit * s.iter_feed_us;
  e.l2_us = s.iters_on_busiest_unit * s.iter_l2_us;
  e.latency_us = s.iters_on_busiest_unit * s.iter_latency_us;
  e.tile_overhead_us = s.tile_overhead_us + s.fixup_us;
  e.reduction_us = s.reduction_us;
  e.transpose_us = s.transpose_us;

  const double extras = e.launch_us + e.setup_us + s.reduction_us + s.transpose_us;
  if (extras > kernel_us)
    e.limiter = GemmLimiter::overhead;
  else if (e.llc_us >= kernel_us)
    e.limiter = GemmLimiter::llc;
  else if (e.dram_us >= kernel_us)
    e.limiter = GemmLimiter::dram;
  else if (e.tile_overhead_us > s.iters_on_busiest_unit * s.iter_us)
    e.limiter = GemmLimiter::overhead;
  else if (s.iter_us == s.iter_math_us)
    e.limiter = GemmLimiter::math;
  else if (s.iter_us == s.iter_feed_us)
    e.limiter = GemmLimiter::shared_memory;
  else if (s.iter_us == s.iter_l2_us)
    e.limiter = GemmLimiter::l2;
  else
    e.limiter = GemmLimiter::latency;
  return e;
}

GemmEstimate predict_gemm(const Hardware& hw, const GemmProblem& problem, const GemmConfig& config,
                          const GemmModelParams& params) {
  validate_gemm_problem(problem);
  const MatrixPrecision precision = gemm_precision(problem, hw);
  const GemmKernelTraits traits = gemm_kernel_traits(hw, params, precision, config);
  if (!traits.feasible)
    throw ConfigError("GEMM config [" + to_string(config) + "] cannot run " +
                      std::string(precision_name(precision)) + " on " + hw.name + ": " +
                      traits.infeasible_reason);
  if (const std::string blocked = gemm_alignment_block(problem, traits); !blocked.empty())
    throw ConfigError("GEMM config [" + to_string(config) + "] cannot run " + describe_gemm_problem(problem) +
                      ": " + blocked);
  const GemmSchedule schedule = schedule_gemm(hw, params, problem, config, traits);
  return finish_gemm_estimate(hw, params, problem, config, traits, schedule);
}

}  // namespace hetrec::gemm_perf::gemm_perf

namespace hetrec::inline gemm_perf {

double predict_best_of(const Hardware& hw, const GemmModelParams& params, const GemmProblem& problem,
                       const GemmConfig& config, std::span<const GemmConfig> alternatives) {
  const MatrixPrecision precision = gemm_precision(problem, hw);
  const auto predict = [&](const GemmConfig& c) {
    const GemmKernelTraits traits = gemm_kernel_traits(hw, params, precision, c);
    if (!traits.feasible || !gemm_alignment_block(problem, traits).empty())
      return std::numeric_limits<double>::quiet_NaN();
    const GemmSchedule schedule = schedule_gemm(hw, params, problem, c, traits);
    return finish_gemm_estimate(hw, params, problem, c, traits, schedule).time_us;
  };
  double best = predict(config);
  for (const GemmConfig& a : alternatives) {
    const double t = predict(a);
    if (!std::isnan(t) && !(t >= best)) best = t;  // a NaN best is replaced too
  }
  return best;
}

}  // namespace hetrec::gemm_perf::gemm_perf
