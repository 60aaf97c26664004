#pragma once
// One `hetrec tune` run on the current device: for every kernel and shape asked for,
// propose variants (pruned and ordered by the kernel's cost model: tunable/embedding_forward/embedding_forward_cost.h,
// tunable/dot_interaction/dot_interaction_cost.h, tunable/sparse_update/sparse_update_cost.h, tunable/dot_interaction/dot_backward_cost.h,
// tunable/cross_net/cross_net_cost.h), compile each
// with NVRTC, check its resources, verify it against the reference, time it, and keep
// the winner; every attempt goes to the attempt log, winners to the winners file, and a
// summary to the results JSON.
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "hw/hardware.h"
#include "core/dtype.h"
#include "data/feature_spec.h"
#include "tunable/small_gemm/small_gemm_variant.h"
#include "tunable/sparse_update/sparse_update_types.h"

namespace hetrec::tune {

struct TuneOptions {
  std::vector<std::string> kernels;   // kernel names (tunable_kernels()), or "all"
  double budget_minutes = 3.0;        // wall time for the whole run
  std::string out_dir;                // attempt log and results JSON go here
  std::string winners_path;           // the winners file the engine loads
  Hardware hw;                        // the description of this device
  std::vector<TableConfig> tables;    // the workload's tables (rows, hotness, pooling)
  int dim = 0;                        // row width
  bool interaction_self = false;      // the dot interaction's (i, i) terms
  std::vector<DType> row_dtypes;      // embedding shapes to tune: one per row dtype
  // The sparse update's rule, from the config's [optim] (sparse, sparse_lr, eps).
  kernels::SparseOptimizerKind sparse_optimizer = kernels::SparseOptimizerKind::rowwise_adagrad;
  double sparse_lr = 0.0;
  double sparse_eps = 1e-8;
  // The cross net's shapes: one per GEMM operand type, at width (tables + 1) x dim.
  std::vector<DType> cross_operand_dtypes = {DType::f32, DType::bf16};
  // The small-GEMM shapes to tune (tunable/small_gemm/small_gemm_cost.h small_gemm_mlp_gemms), with
  // the baseline each must beat: cuBLASLt as the engine runs it.
  std::vector<kernels::SmallGemmShape> small_gemm_shapes;
  int64_t batch = 65536;
  double stop_fraction = 0.10;        // stop a shape once the best is within this of the floor
  double min_occupancy = 0.25;        // reject compiled variants below this occupancy
  int reps = 15;                      // timed launches per candidate (median)
  int rotations = 4;                  // id batches the timing rotates through
  std::string command_line;           // recorded in the results
};

// The kernels that have a variant space.
std::vector<std::string> tunable_kernels();

// Runs the search; progress lines go to `progress`. Returns the results JSON (also
// written to <out_dir>/tune-<date>.json, its path in "results_file").
nlohmann::json run_tuning(const TuneOptions& options, std::ostream& progress);

}  // namespace hetrec::tune
