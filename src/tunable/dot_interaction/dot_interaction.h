#pragma once
// DLRM dot interaction on the device. The F = T + 1 feature vectors of a sample (the
// bottom MLP output first, then the pooled embedding of every table) lie side by side in
// one row of `features` (F x D values), where the bottom MLP and the embedding forward
// wrote them directly: the concatenation costs no copy.
#include <cstdint>

#include "gpu/platform.h"

namespace hetrec::kernels {

struct DotInteractionShape {
  int64_t batch = 0;
  int num_features = 0;  // F
  int dim = 0;           // D
  bool self = false;     // include the (i, i) terms
  int num_pairs() const { return self ? num_features * (num_features + 1) / 2 : num_features * (num_features - 1) / 2; }
  int output_width() const { return dim + num_pairs(); }
};

// out(b, :) = [x_0 (D values), x_i . x_j for i ascending, j < i (j <= i with self) ascending],
// the pair order of nn/dot_interaction.h. features(b, f, d) at features[b * feature_stride +
// f * D + d]; out(b, c) at out[b * out_stride + c]. With `tuned`, that variant
// (tunable/dot_interaction/dot_interaction_tuned.h) runs instead of the built-in one.
class TunedDotForward;
void dot_interaction_forward(const DotInteractionShape& shape, const float* features, int64_t feature_stride,
                             float* out, int64_t out_stride, gpu::stream_t stream, const TunedDotForward* tuned = nullptr);

// Given dout (b, c) at dout[b * dout_stride + c], writes (overwrites) dfeatures(b, f, d) at
// dfeatures[b * dfeature_stride + f * D + d]: x_0 gets the pass-through gradient plus its
// pair terms; d(x_i . x_j) = x_j dx_i + x_i dx_j (2 x_i for a self pair). With `tuned`,
// that variant (tunable/dot_interaction/dot_interaction_backward_tuned.h) runs instead of the built-in one.
class TunedDotBackward;
void dot_interaction_backward(const DotInteractionShape& shape, const float* features, int64_t feature_stride,
                              const float* dout, int64_t dout_stride, float* dfeatures, int64_t dfeature_stride,
                              gpu::stream_t stream, const TunedDotBackward* tuned = nullptr);

}  // namespace hetrec::kernels
