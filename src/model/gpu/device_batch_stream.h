#pragma once
// The GPU model's batches on their way to the device: the one place that stages a batch
// ahead of its step. A batch named with expect_next (Model::prepare_next) is packed into
// page-locked memory and copied to landing buffers on the device while the step before it
// runs (stage_next); when its own step comes, take() finds it already packed (checked by
// its fingerprint) and copy_to_device moves it on the device only. Any other batch is
// packed and copied when its step takes it. Data parallel, a batch is the global batch:
// this rank packs the dense features and labels of its share and its shards' bags of
// every sample (model/gpu/sharded_embeddings.h).
#include <cstdint>
#include <optional>

#include "core/tensor.h"
#include "data/batch.h"
#include "data/batch_fingerprint.h"
#include "gpu/event.h"
#include "gpu/stream.h"
#include "model/gpu/batch_staging.h"

namespace hetrec::inline model::gpu_model {

class ShardedGpuEmbeddings;

class DeviceBatchStream {
 public:
  // num_tables: the model's tables; stage_bags: whether this stream stages their bags
  // itself (false when shards do).
  DeviceBatchStream(int num_dense, int num_tables, bool stage_bags, Allocator& device);

  // Data parallel: the shards that stage the bags, and this rank's place among `ranks`.
  void attach_shards(ShardedGpuEmbeddings* shards, int rank, int ranks);

  // `next` is the batch of the training step after the coming one (the caller keeps it
  // alive and unchanged until that coming step returns).
  void expect_next(const Batch& next) { next_ = &next; }

  // First of every step or prediction: a training step keeps the batch expect_next named
  // for its stage_next; a prediction forgets it.
  void begin(bool training);
  // The batch of the step about to run, packed ahead or now (a prediction's always now:
  // it replaces a batch packed ahead); returns this rank's samples.
  int64_t take(const Batch& batch, bool training);
  // Copies the taken batch into the step buffers (copies on `copy`, `ready` recorded
  // there; `compute` is the stream that will read them). Returns true when a device
  // buffer moved (a captured graph that reads them is then stale).
  bool copy_to_device(gpu::Stream& copy, gpu::Event& ready, gpu::stream_t compute);
  // While the device runs the step just enqueued: packs the batch expect_next named and
  // starts its copies to the landing buffers. A batch that cannot be packed is left for
  // its own step, which reports the error as its own.
  void stage_next(gpu::Stream& copy);

  const DeviceBatch& device() const { return staging_.device(); }
  int64_t samples() const { return device_samples_; }                // this rank's, on the device
  int64_t global_samples() const { return device_global_; }          // data parallel: the global batch's
  int64_t max_ids() const { return staging_.device().bags.max_ids; }  // ids of the staged bags (0 with shards)

 private:
  int64_t pack(const Batch& batch, bool training);

  int num_tables_;
  BatchStaging staging_;
  ShardedGpuEmbeddings* shards_ = nullptr;
  int rank_ = 0, ranks_ = 1;
  const Batch* next_ = nullptr;            // expect_next: the batch of the step after the coming one
  const Batch* to_stage_ = nullptr;        // the coming step's next batch, for stage_next
  std::optional<BatchFingerprint> ahead_;  // the batch packed ahead, if any
  int64_t packed_samples_ = 0;             // this rank's samples of the packed batch
  int64_t packed_global_ = 0;              // data parallel: samples of the packed global batch
  int64_t device_samples_ = 0, device_global_ = 0;  // of the batch in the step buffers
};

}  // namespace hetrec::model::gpu_model
