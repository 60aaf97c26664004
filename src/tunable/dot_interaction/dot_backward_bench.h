#pragma once
// The dot interaction's backward on one workload on the device, for the tuner's gate:
// random features laid out as the GPU model's feature buffer (F x D per sample), random
// output gradients (D pass-through values, then one per pair), batches the timing
// rotates through, a double-precision host reference of the first.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "gpu/device_buffer.h"
#include "gpu/stream.h"
#include "tunable/dot_interaction/dot_interaction.h"
#include "tunable/dot_interaction/dot_backward_cost.h"
#include "tunable/embedding_forward/embedding_forward_bench.h"

namespace hetrec::tune {

using DotBackwardLaunch =
    std::function<void(const kernels::DotInteractionShape&, const float* features, int64_t feature_stride,
                       const float* dout, int64_t dout_stride, float* dfeatures, int64_t dfeature_stride,
                       gpu::stream_t)>;

// Every this many samples (the last of each run of them) the output gradients of the
// pairs that involve feature 0 are zero, so that x_0's gradient is the pass-through alone.
inline constexpr int kDotBackwardPassThroughEvery = 4;

class DotBackwardBench {
 public:
  DotBackwardBench(const kernels::DotForwardShape& shape, int64_t batch, uint64_t seed, int rotations);

  const DotBackwardWorkload& workload() const { return workload_; }
  std::string describe() const;

  // Poisons dfeatures (NaN), runs `launch` on the first batch and compares: every element
  // within the fp32 summation bound of the double-precision reference; in the samples
  // whose pair gradients of feature 0 are zero, x_0's gradient equal to the pass-through
  // gradient exactly.
  ForwardCheck verify(const DotBackwardLaunch& launch);
  double median_us(const DotBackwardLaunch& launch, int reps);

 private:
  kernels::DotInteractionShape shape() const;
  int64_t feature_width() const { return static_cast<int64_t>(workload_.shape.num_features) * workload_.shape.dim; }
  int64_t dout_width() const { return workload_.shape.dim + workload_.pairs(); }

  DotBackwardWorkload workload_;
  gpu::Stream stream_;
  std::vector<gpu::DeviceBuffer> features_, dout_;
  gpu::DeviceBuffer dfeatures_;
  std::vector<float> host_dout_;  // of the first batch
  std::vector<double> reference_, error_bound_;
  gpu::PinnedBuffer host_dfeatures_;  // the output as copied back for verification
};

}  // namespace hetrec::tune
