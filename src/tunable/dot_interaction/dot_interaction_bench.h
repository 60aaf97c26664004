#pragma once
// The dot interaction's forward on one workload on the device, for the tuner's gate:
// random features laid out as the GPU model's feature buffer (F x D per sample), batches
// the timing rotates through, a double-precision host reference of the first.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "gpu/device_buffer.h"
#include "gpu/stream.h"
#include "tunable/dot_interaction/dot_interaction.h"
#include "tunable/dot_interaction/dot_interaction_cost.h"
#include "tunable/embedding_forward/embedding_forward_bench.h"

namespace hetrec::tune {

using DotLaunch = std::function<void(const kernels::DotInteractionShape&, const float* features,
                                     int64_t feature_stride, float* out, int64_t out_stride, gpu::stream_t)>;

class DotForwardBench {
 public:
  DotForwardBench(const kernels::DotForwardShape& shape, int64_t batch, uint64_t seed, int rotations);

  const DotForwardWorkload& workload() const { return workload_; }
  std::string describe() const;

  // Poisons the output (NaN), runs `launch` on the first batch and compares: the
  // pass-through x_0 exactly, every pair within the fp32 dot-product bound.
  ForwardCheck verify(const DotLaunch& launch);
  double median_us(const DotLaunch& launch, int reps);

 private:
  kernels::DotInteractionShape shape() const;
  int width() const { return workload_.shape.dim + workload_.pairs(); }

  DotForwardWorkload workload_;
  gpu::Stream stream_;
  std::vector<gpu::DeviceBuffer> features_;
  gpu::DeviceBuffer out_;
  std::vector<float> host_features_;  // of the first batch
  std::vector<double> reference_, error_bound_;
  gpu::PinnedBuffer host_out_;  // the output as copied back for verification
};

}  // namespace hetrec::tune
