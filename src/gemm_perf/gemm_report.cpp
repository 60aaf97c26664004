#include "gemm_perf/gemm_report.h"

#include <fmt/format.h>

#include <chrono>

#include "gemm_perf/gemm_candidates.h"
#include "gemm_perf/gemm_selector.h"

namespace hetrec::inline gemm_perf {

namespace {

// Same tiles, instruction, warps, cluster and decomposition: pipeline depth and launch
// order variants of one kernel are not listed as alternatives of each other.
bool same_kernel(const GemmConfig& a, const GemmConfig& b) {
  GemmConfig x = a, y = b;
  x.stages = y.stages = 0;
  x.raster = y.raster = GemmRaster::along_n;
  x.swizzle = y.swizzle = 1;
  x.xcd_remap = y.xcd_remap = false;
  return x == y;
}

}  // namespace

std::string gemm_select_report(const Hardware& hw, const GemmProblem& problem,
                               const GemmModelParams& params) {
  validate_gemm_problem(problem);
  const MatrixPrecision precision = gemm_precision(problem, hw);
  std::vector<GemmConfig> candidates = gemm_candidates(hw, precision);
  const std::vector<GemmConfig> unaligned = gemm_unaligned_candidates(hw, precision);
  const GemmSelector selector(hw, params, candidates, unaligned);
  if (!operands_fully_aligned(problem)) candidates.insert(candidates.end(), unaligned.begin(), unaligned.end());

  const auto start = std::chrono::steady_clock::now();
  const RankedConfig best = selector.select(problem);
  const double select_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  const std::vector<RankedConfig> ranked = rank_configs(hw, problem, candidates, params);

  const GemmEstimate& e = best.estimate;
  std::string out;
  out += fmt::format("GEMM {}\n", describe_gemm_problem(problem));
  out += fmt::format("on {} ({}, {} {}s), {} pipe, model params: {} ({})\n", hw.display_name, hw.arch,
                     hw.compute_units, hw.vendor == Vendor::nvidia ? "SM" : "CU", precision_name(precision),
                     params.arch, params.calibrated ? "calibrated" : "not calibrated");
  out += fmt::format("chosen:    {}\n", to_string(best.config));
  out += fmt::format("predicted: {:.2f} us, {:.1f} TFLOP/s, limited by {}\n", e.time_us, e.tflops,
                     limiter_name(e.limiter));
  out += fmt::format(
      "schedule:  {} tiles, {} CTAs, {:.2f} waves on the busiest unit, {} CTA(s) per unit, {:.1f}% of the "
      "padded FLOPs useful\n",
      e.tiles, e.work_units, e.waves, e.ctas_per_unit, 100.0 * e.padding_efficiency);
  out += fmt::format(
      "breakdown: unit {:.2f} us (math {:.2f}, shared-memory feed {:.2f}, L2 {:.2f}, latency {:.2f}, tile "
      "overhead {:.2f}); HBM {:.2f} us for {:.1f} MB",
      e.unit_us, e.math_us, e.feed_us, e.l2_us, e.latency_us, e.tile_overhead_us, e.dram_us,
      e.dram_bytes / 1e6);
  if (e.llc_bytes > 0.0) out += fmt::format("; LLC {:.2f} us for {:.1f} MB", e.llc_us, e.llc_bytes / 1e6);
  out += fmt::format("; launch {:.2f}", e.launch_us);
  if (e.reduction_us > 0.0) out += fmt::format(", split-K reduction {:.2f}", e.reduction_us);
  if (e.transpose_us > 0.0) out += fmt::format(", operand transposes {:.2f}", e.transpose_us);
  out += " us\n";
  out += fmt::format("selection: {:.1f} us of CPU over {} candidates\n", select_us, candidates.size());

  out += fmt::format("alternatives (the best variant of each next-fastest kernel):\n");
  out += fmt::format("  {:>3}  {:>11}  {:>8}  {}\n", "#", "time_us", "TFLOP/s", "config");
  std::vector<GemmConfig> shown = {best.config};
  std::size_t rank = 1;
  for (const RankedConfig& r : ranked) {
    if (shown.size() > kReportAlternatives) break;
    bool seen = false;
    for (const GemmConfig& s : shown) seen = seen || same_kernel(s, r.config);
    if (seen) continue;
    shown.push_back(r.config);
    out += fmt::format("  {:>3}  {:>11.2f}  {:>8.1f}  {}\n", ++rank, r.estimate.time_us, r.estimate.tflops,
                       to_string(r.config));
  }
  return out;
}

}  // namespace hetrec::gemm_perf::gemm_perf
