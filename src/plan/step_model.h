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
//                 MLP, cross net and top MLP, predicted by gemm_perf/'s selector at the
//                 recipe's precision;
//   element-wise  the passes the GPU model runs beside its GEMMs (ReLU backward with bias
//                 sums, cross-layer products, loss, dense optimizer), bytes read + written;
//   embeddings    forward: every id's row read (duplicates included: the lookup is
//                 limited by the rate of row reads, not by distinct rows), ids, pooled
//                 output; backward: key build, radix sort, segment bookkeeping, each
//                 occurrence's pooled-gradient row, and each distinct row (expected under
//                 the id distribution) read and written with its optimizer state;
//                 tables in host memory move their distinct rows over the host link;
//   upload        the batch's bytes over the host link (beside the previous step when
//                 StepWork::upload_ahead, as the engine runs; else before the step);
//   overheads     one per kernel launch, one per step.
//
// With N GPUs (recipe.gpus > 1, the data-parallel engine of model/gpu/gpu_dlrm.cpp) the
// terms are those of every rank: the dense phases on the largest share ceil(B/N) of the
// global batch (the same terms on every rank), each rank's embedding work from its own
// shards (plan/sharded_layout.h; rank-tagged terms), its upload (its dense features and
// labels, its shards' bags of the global batch), and the collectives with the sharding's
// byte counts (plan/comm_model.h): the pooled exchange (embedding_exchange), the dense
// gradients' all-reduce (dense_all_reduce), the pooled gradients' exchange and the
// replicated tables' all-gather (embedding_grad_exchange). The prediction is the step of
// the slowest rank.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/model_config.h"
#include "gemm_perf/gemm_selector.h"
#include "plan/id_distribution.h"
#include "plan/recipe.h"
#include "plan/step_model_params.h"

namespace hetrec::inline plan {

// The phases of GpuDlrm's profiled step (model/gpu/gpu_dlrm.cpp, kPhaseNames), in step
// order, plus the per-step overhead outside them. embedding_exchange, dense_all_reduce
// and embedding_grad_exchange exist in data-parallel steps only (zero on one GPU).
enum class StepPhase {
  upload,
  bottom_mlp_fwd,
  embedding_fwd,
  embedding_exchange,
  interaction_fwd,
  top_mlp_fwd,
  loss,
  top_mlp_bwd,
  interaction_bwd,
  bottom_mlp_bwd,
  dense_all_reduce,
  embedding_grad_exchange,
  embedding_bwd_update,
  dense_optimizer,
  overhead,
};
inline constexpr std::size_t kStepPhaseCount = 15;
inline constexpr StepPhase kAllStepPhases[kStepPhaseCount] = {
    StepPhase::upload,          StepPhase::bottom_mlp_fwd,       StepPhase::embedding_fwd,
    StepPhase::embedding_exchange, StepPhase::interaction_fwd,   StepPhase::top_mlp_fwd,
    StepPhase::loss,            StepPhase::top_mlp_bwd,          StepPhase::interaction_bwd,
    StepPhase::bottom_mlp_bwd,  StepPhase::dense_all_reduce,     StepPhase::embedding_grad_exchange,
    StepPhase::embedding_bwd_update, StepPhase::dense_optimizer, StepPhase::overhead};
// Whether a phase is one of the data-parallel communication phases.
bool communication_phase(StepPhase p);

// A term of every rank (the dense phases, the collectives), as opposed to one rank's own.
inline constexpr int kAllRanks = -1;

std::string_view step_phase_name(StepPhase p);
std::optional<StepPhase> parse_step_phase(std::string_view name);

struct StepTerm {
  StepPhase phase = StepPhase::overhead;
  StepFactor factor = StepFactor::step_overhead_us;
  // Efficiency factors: microseconds at the full rate (time = base / factor).
  // Overhead factors: a count (time = base x factor microseconds).
  double base = 0.0;
  std::string what;  // e.g. "top_mlp.0 wgrad GEMM M=1024 N=3456 K=65536"
  int rank = kAllRanks;  // several GPUs: the rank whose work it is, or every rank
  // The tunable kernel family (tune/kernel_families.h) whose kernel does this work, or ""
  // for work no tuned variant replaces.
  std::string kernel;
  // The time of the tuned variant the run loads over the built-in kernel's, as the tuner
  // measured both on the run's GPU (plan/tuned_kernel_ratios.h); 1 for a built-in kernel.
  double tuned_ratio = 1.0;
};

struct StepWork {
  std::string hardware;
  int64_t batch = 0;  // the global batch
  int gpus = 1;
  std::vector<StepTerm> terms;
  // Several GPUs: the engine runs the embedding work on a stream of its own
  // (GpuModelOptions::overlap_exchanges), beside the bottom MLP's forward and backward and
  // the dense all-reduce and optimizer; with fp16 loss scaling the embedding backward
  // waits for the bottom MLP's (the overflow check). See predict_step.
  bool embedding_stream = false;
  bool loss_scaled = false;
  // The engine copies an announced batch to the device during the step before its own
  // (Model::prepare_next, which hetrec train and e2e_bench use): the upload then runs
  // beside the previous step, and a rank's step is max(device, upload).
  bool upload_ahead = false;
};

struct StepPrediction {
  std::string hardware;
  int64_t batch = 0;
  int gpus = 1;
  std::array<double, kStepPhaseCount> phase_ms{};  // the slowest rank's phases
  double step_ms = 0.0;                            // the slowest rank's step
  double samples_per_s = 0.0;                      // global batch / step
  int slowest_rank = 0;
  std::vector<double> rank_step_ms;  // every rank's step (one entry with one GPU)

  double phase(StepPhase p) const { return phase_ms[static_cast<std::size_t>(p)]; }
};

// The terms of one step of `recipe` on the selector's hardware. Throws ConfigError when
// the recipe does not match the model or a GEMM cannot run there (e.g. a precision the
// GPU lacks).
StepWork step_work(const ModelConfig& model, const OptimConfig& optim, const Recipe& recipe,
                   const GemmSelector& gemm, const IdDistribution& ids);

// The terms a sharding changes, without the dense phases (which are the same on every
// rank for any sharding): each rank's upload and embedding work and the embedding
// exchanges (not the dense all-reduce). The search ranks shardings by it: the step of
// the slowest rank is the dense phases plus the largest of these. Needs no GEMM model.
StepWork sharded_step_work(const ModelConfig& model, const OptimConfig& optim, const Recipe& recipe,
                           const Hardware& hw, const IdDistribution& ids);

// Predicted forward and backward time of rows [first, last) of table `t` as a row_wise
// block alone on one GPU for the recipe's global batch (the search cuts row_wise tables
// into blocks of equal time by it).
double row_block_embedding_us(const ModelConfig& model, const OptimConfig& optim, const Recipe& recipe,
                              const Hardware& hw, const IdDistribution& ids, const StepModelParams& params,
                              std::size_t t, int64_t first, int64_t last);

// Predicted forward and backward time of table `t` alone on one GPU for the recipe's
// global batch (the search balances table_wise shards by it).
double table_embedding_us(const ModelConfig& model, const OptimConfig& optim, const Recipe& recipe,
                          const Hardware& hw, const IdDistribution& ids, const StepModelParams& params, std::size_t t);

// A term's time: its base at the factor's efficiency, times its tuned ratio.
double term_time_us(const StepTerm& term, const StepModelParams& params);
StepPrediction predict_step(const StepWork& work, const StepModelParams& params);

}  // namespace hetrec::plan::plan
