#pragma once
// The step model's term accumulator (plan/step_model.cpp): each kernel, copy and collective
// of a training step as a term (phase, calibrated factor, base quantity, what it is), the
// kernel launches per phase, and the GEMMs priced through the one GEMM dispatch
// (dispatch/gemm_dispatch.h). Internal to the step model.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "dispatch/gemm_dispatch.h"
#include "hw/hardware.h"
#include "gemm_perf/gemm_problem.h"
#include "plan/comm_model.h"
#include "plan/recipe.h"
#include "plan/step_model.h"
#include "plan/step_model_params.h"

namespace hetrec::inline plan::step_model_detail {

constexpr double kFloatBytes = 4.0;
constexpr double kHalfBytes = 2.0;
// Bytes per unit of rate: TB/s = 1e6 bytes per microsecond, GB/s = 1e3.
constexpr double kBytesPerUsPerTbs = 1e6;
constexpr double kBytesPerUsPerGbs = 1e3;
constexpr double kBytesPerGb = 1e9;  // the hardware files quote GB of 10^9 bytes
// 16-bit dense compute: the rounding pass that makes a GEMM's 16-bit operand copy reads
// fp32 and writes 16 bits per element (kernels/convert.cu), one launch per copy.
constexpr double kOperandCopyBytes = kFloatBytes + kHalfBytes;

class WorkBuilder {
 public:
  // `gemm` may be null when no GEMM is priced (sharded_step_work).
  WorkBuilder(const Hardware& hw, const GemmDispatch* gemm, const Recipe& recipe)
      : hw_(hw), gemm_(gemm), recipe_(recipe), launches_(static_cast<std::size_t>(recipe.gpus) + 1) {
    hbm_bytes_per_us_ = hw.hbm_tbs * kBytesPerUsPerTbs;
    host_bytes_per_us_ = hw.host_gbs_per_direction * kBytesPerUsPerGbs;
    peer_bytes_per_us_ = hw.peer_gbs_per_direction * kBytesPerUsPerGbs;
    if (hbm_bytes_per_us_ <= 0.0 || host_bytes_per_us_ <= 0.0)
      throw ConfigError(hw.path + ": the step model needs memory.hbm_tbs and links.host_gbs_per_direction > 0");
    if (recipe.gpus > 1 && peer_bytes_per_us_ <= 0.0)
      throw ConfigError(hw.path + ": a recipe for " + std::to_string(recipe.gpus) +
                        " GPUs needs links.peer_gbs_per_direction > 0");
  }

  // Terms added from now on are rank r's own (kAllRanks: every rank's).
  void set_rank(int r) { rank_ = r; }

  // One GEMM as the dispatch (dispatch/gemm_dispatch.h) prices it: its runner's time
  // without the launch overheads, which the launch count carries.
  void gemm(StepPhase phase, const std::string& layer, const LayerGemm& g) {
    if (!gemm_) throw InternalError("step model: a GEMM priced without a GEMM model");
    const GemmDispatchChoice c = gemm_->choose(g.request);
    const GemmProblem& p = c.problem;
    add(phase, gemm_factor(gemm_precision(p, hw_)), c.predicted_us - c.launch_us,
        layer + " " + g.kind + " GEMM M=" + std::to_string(p.m) + " N=" + std::to_string(p.n) + " K=" + std::to_string(p.k));
    launches(phase, c.launches);
  }
  // D (m x n) = op(A) op(B): `half`, the operands are the recipe's 16-bit copies; `d_16bit`, so is D.
  LayerGemm request(const char* kind, int64_t m, int64_t n, int64_t k, bool ta, bool tb, GemmEpilogue e, bool half,
                    bool d_16bit = false) const {
    return {kind, {m, n, k, ta, tb, e, false, half ? sixteen() : DType::f32, half && d_16bit ? sixteen() : DType::f32, tf32()}};
  }
  DType sixteen() const { return recipe_.dense == DensePrecision::fp16 ? DType::f16 : DType::bf16; }
  // Whether GEMMs on fp32 operands run on the TF32 pipe: a tf32 recipe's, and under a 16-bit
  // recipe those of the layers that keep fp32 operands unless unaligned_gemms = "fp32".
  bool tf32() const { return recipe_.dense == DensePrecision::tf32 || (sixteen_bit() && recipe_.unaligned_tf32); }
  // The rounding pass that makes one 16-bit operand copy of `elements` fp32 values. bf16
  // rounds with integer operations and streams at the HBM rate; fp16 rounds in double
  // precision and is bound by that arithmetic, not by its 6 B per value. `factor` prices
  // the bf16 pass.
  void operand_copy(StepPhase phase, double elements, const std::string& what,
                    StepFactor factor = StepFactor::elementwise) {
    if (recipe_.dense == DensePrecision::fp16) fp16_rounding(phase, elements, what + " fp16 operand copy");
    else hbm(phase, factor, elements * kOperandCopyBytes, what + " 16-bit operand copy");
    launches(phase, 1);
  }
  // Distinct rows the fused embedding update writes, in millions.
  void row_updates(StepPhase phase, double rows, const std::string& what, const std::string& kernel = {}) {
    add(phase, StepFactor::embedding_row_update_us, rows * 1e-6, what, kernel);
  }
  // Row reads of the pooled lookup, in millions.
  void row_reads(StepPhase phase, double reads, const std::string& what, const std::string& kernel = {}) {
    add(phase, StepFactor::embedding_row_read_us, reads * 1e-6, what, kernel);
  }
  // Values rounded to fp16 on the device (gpu/half.h f16_encode), in millions.
  void fp16_rounding(StepPhase phase, double values, const std::string& what) {
    add(phase, StepFactor::fp16_rounding_us, values * 1e-6, what + " (fp16 rounding, double precision)");
  }
  bool sixteen_bit() const { return sixteen_bit_dense(recipe_.dense); }
  // Bytes of one operand element written or read in 16 bits (when `half`) or fp32.
  static double operand_bytes(bool half) { return half ? kHalfBytes : kFloatBytes; }
  // An element-wise pass that also writes `values` fp16 operands rounds them in double
  // precision (gpu/half.h), which dominates its bytes; bf16 rounding is a few integer
  // operations and streams.
  void rounded_in_pass(StepPhase phase, double values, const std::string& what) {
    if (recipe_.dense == DensePrecision::fp16) fp16_rounding(phase, values, what + " (fp16 operands it writes)");
  }
  // `kernel`: the tunable kernel family whose kernel moves these bytes (StepTerm::kernel).
  void hbm(StepPhase phase, StepFactor factor, double bytes, const std::string& what, const std::string& kernel = {}) {
    add(phase, factor, bytes / hbm_bytes_per_us_, what, kernel);
  }
  void host(StepPhase phase, StepFactor factor, double bytes, const std::string& what) {
    add(phase, factor, bytes / host_bytes_per_us_, what);
  }
  // Distinct embedding rows of `row_bytes` (of tables in host memory that together span
  // `span_bytes`) moving `bytes` over the link: at the GPU's measured gather rate for that
  // span and row size where the hardware file has one (the rate falls as the span outgrows
  // the address translation caches' reach; hw/hardware.h), else at the link's datasheet rate.
  void host_table_rows(StepPhase phase, double bytes, double span_bytes, double row_bytes, const std::string& what) {
    const std::optional<double> gbs = measured_host_gather_gbs(hw_, span_bytes / kBytesPerGb, row_bytes);
    const double bytes_per_us = gbs ? *gbs * kBytesPerUsPerGbs : host_bytes_per_us_;
    add(phase, StepFactor::host_tables, bytes / bytes_per_us, what);
  }
  // A collective between the GPUs: its busiest rank's bytes over the peer link and its
  // latency steps.
  void collective(StepPhase phase, const CollectiveCost& cost, const std::string& what) {
    add(phase, StepFactor::peer_link, cost.link_bytes / peer_bytes_per_us_, what + " (bytes on the busiest link)");
    add(phase, StepFactor::collective_latency_us, cost.latency_steps, what + " (latency steps)");
  }
  void launches(StepPhase phase, int count) {
    launches_[static_cast<std::size_t>(rank_ + 1)][static_cast<std::size_t>(phase)] += count;
  }

  StepWork finish(bool with_step_overhead = true) {
    for (std::size_t r = 0; r < launches_.size(); ++r) {
      rank_ = static_cast<int>(r) - 1;
      for (StepPhase p : kAllStepPhases) {
        const int n = launches_[r][static_cast<std::size_t>(p)];
        if (n > 0) add(p, StepFactor::kernel_overhead_us, n, std::to_string(n) + " kernel launches");
      }
    }
    rank_ = kAllRanks;
    if (with_step_overhead) add(StepPhase::overhead, StepFactor::step_overhead_us, 1.0, "host work per step");
    work_.hardware = hw_.name;
    work_.batch = recipe_.batch;
    work_.gpus = recipe_.gpus;
    return std::move(work_);
  }

 private:
  void add(StepPhase phase, StepFactor factor, double base, const std::string& what, const std::string& kernel = {}) {
    if (base > 0.0) work_.terms.push_back({phase, factor, base, what, rank_, kernel});
  }
  const Hardware& hw_;
  const GemmDispatch* gemm_;
  const Recipe& recipe_;
  double hbm_bytes_per_us_ = 0.0;
  double host_bytes_per_us_ = 0.0;
  double peer_bytes_per_us_ = 0.0;
  int rank_ = kAllRanks;
  // Launches per phase: [0] every rank's, [r + 1] rank r's.
  std::vector<std::array<int, kStepPhaseCount>> launches_;
  StepWork work_;
};

}  // namespace hetrec::plan::step_model_detail
