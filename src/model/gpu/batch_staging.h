#pragma once
// Moves a host Batch to the device: the batch is packed into page-locked staging memory,
// copied asynchronously on a copy stream, and an event marks the copies done, so the
// compute stream waits only for its own inputs. Device buffers keep their addresses
// until a batch outgrows them (which a captured step graph depends on).
#include <cstdint>

#include "core/tensor.h"
#include "data/batch.h"
#include "gpu/device_buffer.h"
#include "gpu/event.h"
#include "gpu/stream.h"
#include "kernels/embedding_types.h"

namespace hetrec::gpu_model {

struct DeviceBatch {
  int64_t size = 0;
  const float* dense = nullptr;   // size x num_dense
  const float* labels = nullptr;  // size (null when not copied)
  kernels::DeviceBags bags;
};

class BatchStaging {
 public:
  BatchStaging(int num_dense, int num_tables, Allocator& device);

  // Copies `batch` (labels too when with_labels) on `copy_stream` and records `ready`
  // there. Returns true when device buffers had to grow (their addresses changed). Waits
  // for the previous copies to finish before refilling the staging memory.
  bool upload(const Batch& batch, bool with_labels, gpu::Stream& copy_stream, gpu::Event& ready);
  const DeviceBatch& device() const { return device_; }

 private:
  bool reserve(int64_t samples, int64_t ids);
  int num_dense_;
  int num_tables_;
  Allocator& device_alloc_;
  int64_t sample_capacity_ = 0;
  int64_t id_capacity_ = 0;
  gpu::PinnedBuffer staging_;
  Tensor dense_, labels_, offsets_, ids_;
  DeviceBatch device_;
  bool copies_in_flight_ = false;
  gpu::Event copies_done_{false};
};

}  // namespace hetrec::gpu_model
