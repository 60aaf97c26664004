#pragma once
// The embedding backward's fused sparse update on one workload on the device, for the
// tuner's gate: the model's tables filled with the engine's initial rows, optimizer
// state at a known positive value, several batches of random skewed ids with random
// pooled gradients, each prepared once with the engine's own kernels (sort, segments,
// chunk sums of long rows), so that only the update is verified and timed. Timing
// rotates through the batches so no batch stays in L2. Verification restores a sample
// of the touched rows (and their state) before the run and compares them after it with
// a double-precision host reference of the optimizer's rule; untouched rows beside them
// must not change.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "data/feature_spec.h"
#include "gpu/device_buffer.h"
#include "gpu/stream.h"
#include "kernels/embedding_types.h"
#include "tunable/embedding_forward/embedding_forward_bench.h"
#include "tunable/sparse_update/sparse_update_cost.h"

namespace hetrec::tune {

using UpdateLaunch = std::function<void(const kernels::EmbeddingTables&, const kernels::DeviceBags&, const float* grad,
                                        int64_t grad_stride, const kernels::SparseOptimizerParams&,
                                        const kernels::SparseUpdatePlan&, gpu::stream_t)>;

// The optimizer the update applies, as the config's [optim] gives it.
struct SparseUpdateRule {
  kernels::SparseOptimizerKind kind = kernels::SparseOptimizerKind::rowwise_adagrad;
  float lr = 0.0f;
  float eps = 1e-8f;
};

class SparseUpdateBench {
 public:
  // `seed` draws rows, ids and gradients (pass a fresh one per run). `rotations` batches.
  SparseUpdateBench(const std::vector<TableConfig>& tables, int dim, DType row_dtype, const SparseUpdateRule& rule,
                    int64_t batch, uint64_t seed, int rotations);

  const SparseUpdateWorkload& workload() const { return workload_; }
  std::string describe() const;  // one line: tables, batch, ids, rows, bytes

  // Restores the sampled rows and state, runs `launch` on the first batch and compares
  // them with the reference.
  ForwardCheck verify(const UpdateLaunch& launch);
  // Median device time of `reps` launches (microseconds), rotating through the batches.
  double median_us(const UpdateLaunch& launch, int reps);

 private:
  struct UpdateBatch {
    gpu::DeviceBuffer offsets, ids, grad, workspace;
    std::vector<int32_t> host_offsets, host_ids;
    kernels::DeviceBags bags;
    kernels::SparseUpdatePlan plan;
  };
  void run(const UpdateLaunch& launch, const UpdateBatch& b);

  std::vector<TableConfig> tables_;
  SparseUpdateRule rule_;
  SparseUpdateWorkload workload_;
  int64_t total_rows_ = 0;
  gpu::Stream stream_;
  gpu::DeviceBuffer weights_, accumulators_, row_offsets_, mean_pooling_, scalars_;
  kernels::EmbeddingTables device_tables_;
  kernels::SparseOptimizerParams optimizer_;
  std::vector<UpdateBatch> batches_;
  // The checked rows: sampled touched rows, then untouched rows beside them.
  int64_t checked_touched_ = 0;
  std::vector<int64_t> checked_rows_;
  gpu::DeviceBuffer checked_index_, snapshot_rows_, snapshot_state_, readback_rows_, readback_state_;
  std::vector<float> initial_rows_;   // checked rows x dim, as stored (16-bit rows widened exactly)
  std::vector<float> initial_state_;  // checked rows x state floats
  std::vector<double> expect_rows_, tol_rows_, expect_state_, tol_state_;
};

}  // namespace hetrec::tune
