#pragma once
// The step-time model: predicted time of one training step of the GPU model (model/gpu/)
// under a recipe, phase by phase, in the phases the GPU model's profiler reports.
//
// It works in two stages. step_work lists the step's work as terms, each a quantity at
// the full datasheet rate (microseconds of GEMM-model time, of HBM or host-link transfer)
// or a count (kernel launches, steps), tagged with the efficiency factor that turns it
// into time. predict_step applies a StepModelParams. Calibration refits the factors to
// measured steps without recomputing the terms.
//
// What each term counts (docs/planner.md gives the derivations):
//   GEMMs         every forward, input-gradient and weight-gradient GEMM of the bottom
//                 MLP, cross net and top MLP, predicted by perf/'s selector at the
//                 recipe's precision;
//   element-wise  the passes the GPU model runs beside its GEMMs (ReLU backward with bias
//                 sums, cross-layer products, loss, dense optimizer), bytes read + written;
//   embeddings    forward: every id's row read (duplicates included: the lookup is
//                 limited by the rate of row reads, not by distinct rows), ids, pooled
//                 output; backward: key build, radix sort, segment bookkeeping, each
//                 occurrence's pooled-gradient row, and each distinct row (expected under
//                 the id distribution) read and written with its optimizer state;
//                 tables in host memory move their distinct rows over the host link;
//   upload        the batch's bytes over the host link (not overlapped: see
//                 StepModelParams::upload_overlaps);
//   overheads     one per kernel launch, one per step.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/model_config.h"
#include "perf/gemm_selector.h"
#include "plan/id_distribution.h"
#include "plan/recipe.h"
#include "plan/step_model_params.h"

namespace hetrec {

// The phases of GpuDlrm's profiled step (model/gpu/gpu_dlrm.cpp, kPhaseNames), plus the
// per-step overhead outside them.
enum class StepPhase {
  upload,
  bottom_mlp_fwd,
  embedding_fwd,
  interaction_fwd,
  top_mlp_fwd,
  loss,
  top_mlp_bwd,
  interaction_bwd,
  bottom_mlp_bwd,
  embedding_bwd_update,
  dense_optimizer,
  overhead,
};
inline constexpr std::size_t kStepPhaseCount = 12;
inline constexpr StepPhase kAllStepPhases[kStepPhaseCount] = {
    StepPhase::upload,          StepPhase::bottom_mlp_fwd,  StepPhase::embedding_fwd,       StepPhase::interaction_fwd,
    StepPhase::top_mlp_fwd,     StepPhase::loss,            StepPhase::top_mlp_bwd,         StepPhase::interaction_bwd,
    StepPhase::bottom_mlp_bwd,  StepPhase::embedding_bwd_update, StepPhase::dense_optimizer, StepPhase::overhead};

std::string_view step_phase_name(StepPhase p);
std::optional<StepPhase> parse_step_phase(std::string_view name);

struct StepTerm {
  StepPhase phase = StepPhase::overhead;
  StepFactor factor = StepFactor::step_overhead_us;
  // Efficiency factors: microseconds at the full rate (time = base / factor).
  // Overhead factors: a count (time = base x factor microseconds).
  double base = 0.0;
  std::string what;  // e.g. "top_mlp.0 wgrad GEMM M=1024 N=3456 K=65536"
};

struct StepWork {
  std::string hardware;
  int64_t batch = 0;
  std::vector<StepTerm> terms;
};

struct StepPrediction {
  std::string hardware;
  int64_t batch = 0;
  std::array<double, kStepPhaseCount> phase_ms{};
  double step_ms = 0.0;
  double samples_per_s = 0.0;

  double phase(StepPhase p) const { return phase_ms[static_cast<std::size_t>(p)]; }
};

// The terms of one step of `recipe` on the selector's hardware. Throws ConfigError when
// the recipe does not match the model or a GEMM cannot run there (e.g. a precision the
// GPU lacks).
StepWork step_work(const ModelConfig& model, const OptimConfig& optim, const Recipe& recipe,
                   const GemmSelector& gemm, const IdDistribution& ids);

double term_time_us(const StepTerm& term, const StepModelParams& params);
StepPrediction predict_step(const StepWork& work, const StepModelParams& params);

}  // namespace hetrec
