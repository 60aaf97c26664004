#pragma once
// The sizes of the GPU model's batch buffers (model/gpu/batch_staging.*): how the id
// capacity grows, the device buffers' element counts and the page-locked staging's bytes.
// Plain C++ (constexpr), for the staging and for the planner (plan/memory_model.cpp,
// plan/step_model.cpp), which counts them without a device.
#include <cstddef>
#include <cstdint>

namespace hetrec::inline model::gpu_model {

// Id capacities grow to this factor times the ids of the batch that outgrew them, plus
// one, so a stream of slowly growing batches reallocates only a few times.
inline constexpr double kIdCapacityGrowth = 1.25;

// The id capacity the staging and the device id buffers take for a batch of `ids` ids
// that outgrew the old one (and so the embedding backward's workspace capacity).
constexpr int64_t grown_id_capacity(int64_t ids) {
  return static_cast<int64_t>(static_cast<double>(ids) * kIdCapacityGrowth) + 1;
}

// Elements of the device buffers of `samples` samples: dense features (one more, so a
// model without dense features still has a buffer), labels and the bag offsets (one per
// (table, sample) and the id count).
constexpr int64_t batch_dense_elements(int64_t samples, int num_dense) { return samples * num_dense + 1; }
constexpr int64_t batch_label_elements(int64_t samples) { return samples; }
constexpr int64_t batch_offset_elements(int64_t samples, int num_tables) { return samples * num_tables + 1; }

// Bytes of the page-locked staging of `samples` samples and `ids` ids: dense features and
// labels (fp32), offsets and ids (int32).
constexpr std::size_t staging_bytes(int64_t samples, int64_t ids, int num_dense, int num_tables) {
  return static_cast<std::size_t>(samples * num_dense + batch_label_elements(samples)) * sizeof(float) +
         static_cast<std::size_t>(batch_offset_elements(samples, num_tables) + ids) * sizeof(int32_t);
}

}  // namespace hetrec::model::gpu_model
