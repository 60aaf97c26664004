#pragma once
// The exact ROC AUC of an evaluation set computed on the device (kernels/auc.h), for the
// GPU model's evaluation. Its buffers come straight from the driver and are freed at once,
// so they never stay cached in the training step's allocator (nor count in its peak).
#include <span>

#include "gpu/stream.h"

namespace hetrec::inline model::gpu_model {

// NaN for an empty set. Waits for the result on `stream`.
double device_roc_auc(std::span<const float> scores, std::span<const float> labels, gpu::Stream& stream);

}  // namespace hetrec::model::gpu_model
