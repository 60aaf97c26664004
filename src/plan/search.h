#pragma once
// The recipe search: every candidate within the user's constraints (batch size, dense
// precision, row precision, and, when allowed, tables moved to host memory until the rest
// fits), filtered by the memory model and ranked by the step model's samples per second.
//
// With N GPUs (PlanConstraints::gpus) the batch is the global batch and each candidate
// (batch, precisions) also gets a sharding: candidate_shardings proposes table_wise
// placements balanced by each table's predicted embedding time (longest processing time
// first) or by its bytes, variants that split the costliest or the largest tables
// row_wise (column_wise where row_wise is not legal), the same with small tables
// replicated, and uniform row_wise / column_wise; every one legal for the GPU engine.
// They are ranked by the terms a sharding changes (sharded_step_work: the dense phases
// are the same for all), and the fastest whose every rank fits is kept.
//
// The objective is what users pay for: samples/s within the user's quality constraints
// (the allowed row and dense precisions, the largest batch, the memory headroom). The
// default sets are the ones treated as quality-neutral (docs/planner.md, "Quality
// constraints"): fp32 and stochastic-rounded 16-bit rows, fp32, TF32 and bf16 GEMMs with
// fp32 accumulation, the config's own batch (bind_batch_to_config). A user who wants precision to pay for itself
// sets lower_precision_gain > 0: a candidate's score is then its samples/s divided by
// (1 + lower_precision_gain) for every step down from full precision (16-bit rows: one
// step; TF32 GEMMs: one; bf16 or fp16 GEMMs: two).
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "plan/memory_model.h"
#include "plan/recipe.h"
#include "plan/step_model.h"
#include "plan/workload.h"

namespace hetrec::inline plan {

// Memory kept free by default: 10% of the usable device memory (fragmentation, the
// evaluation pass, and the memory model's own error).
inline constexpr double kDefaultHeadroom = 0.10;
// The largest batch tried when the caller has no config batch to bind to (a workload
// built in code): 262144 is the largest the H200 holds with 16-bit rows. The entry points
// (`hetrec plan`, `hetrec bench port`, hetrec.plan) bind it to the config's batch instead
// (bind_batch_to_config).
inline constexpr int64_t kDefaultMaxBatch = 262144;
inline constexpr int64_t kDefaultMinBatch = 1024;
// The objective is throughput within the constraints: no discount for a lower precision
// inside the allowed (quality-neutral) sets.
inline constexpr double kDefaultLowerPrecisionGain = 0.0;

// Every embedding row precision the GPU engine runs.
inline constexpr DType kRowPrecisions[] = {DType::f32, DType::f16, DType::bf16};

struct PlanConstraints {
  int gpus = 1;  // GPUs of one host (the --hw hardware, its peer link between them)
  double headroom = kDefaultHeadroom;
  // The quality-neutral default sets: fp32, tf32 and bf16 GEMMs (bf16 recipes are
  // measured and calibrated on the H200, docs/planner.md); fp16, which adds loss scaling,
  // on request. Every row precision: 16-bit rows are updated with stochastic rounding.
  std::vector<DensePrecision> dense = {DensePrecision::fp32, DensePrecision::tf32, DensePrecision::bf16};
  std::vector<DType> rows = std::vector<DType>(std::begin(kRowPrecisions), std::end(kRowPrecisions));
  bool allow_host_tables = false;  // on request: host-resident tables are not calibrated yet
  int64_t min_batch = kDefaultMinBatch;
  int64_t max_batch = kDefaultMaxBatch;
  double lower_precision_gain = kDefaultLowerPrecisionGain;
};

// Throws ConfigError naming the bad constraint.
void validate_constraints(const PlanConstraints& c);

// The quality-neutral batch: `config_batch`, the config's train.batch_size, which its
// learning rates are tuned for; min_batch and max_batch are both set to it. Another batch
// trains another trajectory. Larger: on the H200, the MLPerf DLRM-DCNv2 model trained at
// batch 262144 with the learning rates of its config (tuned at 65536) reached AUC 0.522
// after 2,097,152 samples where batch 65536 reached 0.655
// (bench/results/direct-port-20261202-from-h100_sxm.json). Smaller: more updates per
// sample, so a higher AUC at equal samples at fewer samples/s; batch 32768 with fp32 rows
// led batch 65536 by 0.0229 after 2,097,152 samples and by 0.0107 after 16,777,216
// (bench/results/direct-port-20261205-h200-from-h100-fp32rows-b32k-{2m,16m}.json). A
// constraints file, --min-batch or --max-batch applied afterwards opens the range.
void bind_batch_to_config(PlanConstraints& c, int64_t config_batch);

// The batch range a caller asked for, over bind_batch_to_config's: each bound given replaces
// that bound. A smallest batch above the largest with no largest given (a min_batch past the
// config's) is a ConfigError naming the caller's `min_name` and `max_name`.
void apply_batch_range(PlanConstraints& c, int64_t config_batch, std::optional<int64_t> min_batch,
                       std::optional<int64_t> max_batch, std::string_view min_name, std::string_view max_name);

// Empty when `batch` is the config's batch; else what a user must know before training
// it: the learning rates were tuned at the config's batch.
std::string batch_quality_note(int64_t batch, int64_t config_batch);

struct RecipeEvaluation {
  Recipe recipe;
  MemoryEstimate memory;  // with several GPUs: the rank that needs the most device memory
  std::vector<MemoryEstimate> rank_memory;  // every rank's (one with one GPU)
  bool fits = false;
  StepPrediction step;  // computed for every evaluation that fits, and by evaluate_recipe
  double score = 0.0;   // samples/s discounted for lowered precision
  std::string note;     // e.g. why the GEMMs run on another pipe than the recipe names
  std::string refusal;  // when it does not fit: what it needs and its largest consumers
};

// Precision steps down from fp32 rows and fp32 GEMMs.
int precision_steps(const Recipe& recipe);

// Memory, fit and step prediction of one recipe on one target.
RecipeEvaluation evaluate_recipe(const Workload& workload, const Recipe& recipe, const PlanTarget& target,
                                 const PlanConstraints& constraints);

struct PlanResult {
  std::string hardware;
  std::vector<RecipeEvaluation> ranked;   // candidates that fit, best score first
  std::vector<RecipeEvaluation> refused;  // candidates that do not fit (memory only)

  // The chosen recipe. Throws ConfigError when nothing fits, naming the largest consumers
  // of the smallest candidate.
  const RecipeEvaluation& best() const;
};

// Batch sizes tried: the powers of two in [min_batch, max_batch], and max_batch itself.
std::vector<int64_t> candidate_batches(const PlanConstraints& c);
// The order in which tables move to host memory: fewest lookups per byte first.
std::vector<int> host_placement_order(const ModelConfig& model);

// The shardings tried for `base` (its batch, row dtype and placement; gpus > 1), each
// legal for the GPU engine (gpu_sharding_allowed), without duplicates. The first is the
// default round-robin table_wise placement (dist::plan_sharding's).
std::vector<std::vector<TableSharding>> candidate_shardings(const Workload& workload, const Recipe& base,
                                                            const PlanTarget& target);

PlanResult plan_recipes(const Workload& workload, const PlanTarget& target, const PlanConstraints& constraints);

}  // namespace hetrec::plan::plan
