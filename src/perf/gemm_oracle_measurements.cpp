#include "perf/gemm_oracle_measurements.h"

#include <algorithm>
#include <limits>

#include "core/error.h"
#include "perf/gemm_model.h"

namespace hetrec {
namespace {

// Bytes of K one shared-memory stage holds when the library chooses it: 128 bytes of each
// operand row, the swizzle width of Hopper's TMA loads (CUTLASS sm90 kernels' tile K).
constexpr int kAutoStageKBytes = 128;
// Consumer warpgroups per CTA of the library's Hopper kernels: one per 64 rows, at most two
// (CUTLASS's cooperative kernels; the 256-row tiles give each warpgroup 128 rows).
constexpr int kMaxConsumerWarpgroups = 2;
// SIMT (fp32 without TF32) warp layout: warps of 32 x 32 outputs, at most 4 x 2 of them
// (CUTLASS SIMT kernels: 128 or 256 threads per CTA).
constexpr int kSimtWarpTile = 32;
constexpr int kSimtMaxWarpsM = 4, kSimtMaxWarpsN = 2;
// Deepest pipeline tried when the library chooses the stage count.
constexpr int kMaxAutoStages = 8;

const MatrixInstruction* instruction_for(const Hardware& hw, MatrixPrecision p) {
  for (const MatrixInstruction& i : hw.matrix_instructions)
    if (i.precision == p) return &i;
  return nullptr;
}

}  // namespace

GemmProblem oracle_problem(const OracleShape& s) {
  GemmProblem p;
  p.m = s.m;
  p.n = s.n;
  p.k = s.k;
  p.trans_a = s.trans_a;
  p.trans_b = s.trans_b;
  const auto fail = [&](const std::string& what) {
    throw ConfigError("GEMM oracle shape '" + s.id + "': " + what);
  };
  if (s.precision == "fp32" || s.precision == "tf32") {
    p.a_type = p.b_type = DType::f32;
    p.allow_tf32 = s.precision == "tf32";
  } else if (s.precision == "bf16") {
    p.a_type = p.b_type = DType::bf16;
  } else if (s.precision == "fp16") {
    p.a_type = p.b_type = DType::f16;
  } else if (s.precision == "fp8" || s.precision == "fp8_e4m3") {
    p.a_type = p.b_type = DType::f8e4m3;
    p.fp8_scaling = Fp8Scaling::per_tensor;
  } else {
    fail("unknown precision '" + s.precision + "'");
  }
  if (s.d_type == "fp32" || s.d_type == "f32") p.c_type = DType::f32;
  else if (s.d_type == "bf16") p.c_type = DType::bf16;
  else if (s.d_type == "fp16" || s.d_type == "f16") p.c_type = DType::f16;
  else fail("unknown output type '" + s.d_type + "'");
  if (s.epilogue == "none") p.epilogue = GemmEpilogue::none;
  else if (s.epilogue == "bias") p.epilogue = GemmEpilogue::bias;
  else if (s.epilogue == "relu_bias" || s.epilogue == "bias_relu") p.epilogue = GemmEpilogue::bias_relu;
  else fail("unknown epilogue '" + s.epilogue + "'");
  validate_gemm_problem(p);
  return p;
}

bool oracle_model_config(const Hardware& hw, const GemmProblem& problem, const OracleCandidate& cand,
                         GemmConfig& c, std::string& reason) {
  const MatrixPrecision precision = gemm_precision(problem, hw);
  const MatrixInstruction* inst = instruction_for(hw, precision);
  if (!inst) {
    reason = "no matrix instruction for the precision";
    return false;
  }
  if (cand.config.tile_m <= 0 || cand.config.tile_n <= 0) {
    reason = "tile chosen inside the library (not enumerable)";
    return false;
  }
  c = GemmConfig{};
  c.tile_m = cand.config.tile_m;
  c.tile_n = cand.config.tile_n;
  const int operand_bytes = static_cast<int>(dtype_size(problem.a_type));
  c.tile_k = cand.config.tile_k > 0 ? cand.config.tile_k : kAutoStageKBytes / operand_bytes;
  c.cluster_m = std::max(1, cand.config.cluster_m);
  c.cluster_n = std::max(1, cand.config.cluster_n);
  c.split_k = std::max(1, cand.split_k);
  c.decomposition = c.split_k > 1 ? GemmDecomposition::split_k : GemmDecomposition::data_parallel;
  c.swizzle = std::max(1, cand.config.swizzle);
  c.raster = GemmRaster::along_n;
  c.family = cand.algo_id;
  if (inst->scope == IssueScope::warpgroup) {
    if (c.tile_m % inst->m != 0) {
      reason = "tile rows not a multiple of the warpgroup instruction's " + std::to_string(inst->m);
      return false;
    }
    const int groups = std::min(kMaxConsumerWarpgroups, c.tile_m / inst->m);
    int n = std::min(c.tile_n, inst->n_max);
    while (n >= inst->n_min && (!inst->allows_n(n) || c.tile_n % n != 0)) n -= inst->n_step;
    if (n < inst->n_min) {
      reason = "no instruction width divides the tile's " + std::to_string(c.tile_n) + " columns";
      return false;
    }
    c.inst_m = inst->m;
    c.inst_n = n;
    c.inst_k = inst->k;
    c.warps_m = 4 * groups;
    c.warps_n = 1;
  } else if (inst->scope == IssueScope::warp && inst->m == 1) {  // SIMT FMA
    c.inst_m = c.inst_n = c.inst_k = 1;
    c.warps_m = std::clamp(c.tile_m / kSimtWarpTile, 1, kSimtMaxWarpsM);
    c.warps_n = std::clamp(c.tile_n / kSimtWarpTile, 1, kSimtMaxWarpsN);
  } else {
    reason = "instruction scope of this GPU not completed from cuBLASLt ids";
    return false;
  }
  if (c.tile_k % c.inst_k != 0) c.tile_k = ((c.tile_k + c.inst_k - 1) / c.inst_k) * c.inst_k;
  // Stages: the library's, or the deepest pipeline that fits when it chooses.
  const int stages_given = cand.config.stages;
  for (int stages = stages_given > 0 ? stages_given : kMaxAutoStages; stages >= 2; --stages) {
    c.stages = stages;
    const GemmKernelTraits t = gemm_kernel_traits(hw, GemmModelParams{}, precision, c);
    if (t.feasible) return true;
    reason = t.infeasible_reason;
    if (stages_given > 0) break;
  }
  return false;
}

OracleConversion oracle_measurements(const Hardware& hw, const GemmOracle& oracle) {
  OracleConversion out;
  for (const OracleShape& s : oracle.shapes) {
    if (!s.skipped.empty() || s.candidates.empty()) {
      ++out.skipped_shapes;
      continue;
    }
    MeasuredShape m;
    m.id = s.id;
    m.problem = oracle_problem(s);
    m.heuristic_us = s.heuristic_median_us;
    double best_all = std::numeric_limits<double>::infinity(), best_described = best_all;
    for (const OracleCandidate& c : s.candidates) {
      ++out.candidates;
      best_all = std::min(best_all, c.median_us);
      GemmConfig config;
      std::string reason;
      if (!(c.median_us > 0.0) || !oracle_model_config(hw, m.problem, c, config, reason)) {
        ++out.undescribed;
        continue;
      }
      best_described = std::min(best_described, c.median_us);
      m.candidates.push_back({c.key, config, c.median_us});
    }
    if (s.heuristic_median_us > 0.0) best_all = std::min(best_all, s.heuristic_median_us);
    if (m.candidates.empty()) {
      ++out.undescribed_shapes;
      continue;
    }
    m.best_measured_us = best_all;
    if (best_all < best_described) ++out.oracle_undescribed;
    out.shapes.push_back(std::move(m));
  }
  return out;
}

}  // namespace hetrec
