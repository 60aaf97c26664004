#pragma once
// Batches from NumPy arrays, so that a user's own pipeline can feed the engine:
//   dense   float32 [B, num_dense]
//   sparse  integer ids: [B, T] (one id per bag), [B, T, H] (H ids in every bag), or a
//           list of T arrays, table t's being [B] or [B, H_t]
//   labels  float32 [B] of 0 and 1
// Ids may be int32 or int64 and must lie in [0, rows) of their table. A wrong dtype,
// shape or id is a DataError naming the array, what it holds and what was expected.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>

#include "data/batch.h"
#include "model/model_config.h"

namespace hetrec::python {

// Samples [begin, end) of the arrays as one Batch; `labels` may be None (zeros).
Batch batch_from_arrays(const ModelConfig& model, const pybind11::handle& dense, const pybind11::handle& sparse,
                        const pybind11::handle& labels, int64_t begin, int64_t end);

// The sample count B of `dense` after checking its dtype and shape against the model.
int64_t sample_count(const ModelConfig& model, const pybind11::handle& dense);

}  // namespace hetrec::python
