#pragma once
// The pooled embedding lookup on one workload on the device, for the tuner's gate: the
// model's tables filled with random rows, several batches of random skewed ids (timing
// rotates through them so no batch stays in L2), a double-precision host reference of
// the first batch, and a pooled output laid out as the engine's (inside the wider
// feature buffer, after the bottom MLP's slot).
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "data/feature_spec.h"
#include "gpu/device_buffer.h"
#include "gpu/stream.h"
#include "kernels/embedding_types.h"
#include "tunable/embedding_forward/embedding_forward_cost.h"

namespace hetrec::tune {

using ForwardLaunch = std::function<void(const kernels::EmbeddingTables&, const kernels::DeviceBags&,
                                         const kernels::PooledView&, int32_t* bad_ids, gpu::stream_t)>;

struct ForwardCheck {
  bool ok = false;
  std::string reason;          // why not
  double max_abs_error = 0.0;  // over the pooled output
};

class EmbeddingForwardBench {
 public:
  // `seed` draws rows and ids (pass a fresh one per run). `rotations` batches of ids.
  EmbeddingForwardBench(const std::vector<TableConfig>& tables, int dim, DType row_dtype, int64_t batch, uint64_t seed,
                        int rotations);

  const EmbeddingForwardWorkload& workload() const { return workload_; }
  std::string describe() const;  // one line: tables, batch, ids, bytes

  // Poisons the feature buffer (NaN), runs `launch` on the first batch and compares with
  // the reference: every pooled value within the fp32 summation bound, the bottom MLP's
  // slot untouched, and the count of out-of-range ids exact.
  ForwardCheck verify(const ForwardLaunch& launch);
  // Median device time of `reps` launches (microseconds), rotating through the batches.
  double median_us(const ForwardLaunch& launch, int reps);

 private:
  struct IdBatch {
    gpu::DeviceBuffer offsets, ids;
    std::vector<int32_t> host_offsets, host_ids;
    int64_t bad_ids = 0;
  };
  kernels::DeviceBags bags(const IdBatch& b) const;
  kernels::PooledView pooled() const;

  std::vector<TableConfig> tables_;
  EmbeddingForwardWorkload workload_;
  gpu::Stream stream_;
  gpu::DeviceBuffer weights_, row_offsets_, mean_pooling_, features_, bad_counter_;
  kernels::EmbeddingTables device_tables_;
  std::vector<int64_t> host_row_offsets_;
  std::vector<IdBatch> batches_;
  std::vector<double> reference_;    // batch x tables x dim, of the first batch
  std::vector<double> error_bound_;  // per pooled value
  gpu::PinnedBuffer host_features_;   // the feature buffer as copied back for verification
};

}  // namespace hetrec::tune
