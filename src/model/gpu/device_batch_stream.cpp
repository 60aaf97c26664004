#include "model/gpu/device_batch_stream.h"

#include <string>
#include <utility>

#include "core/error.h"
#include "data/batch_checks.h"
#include "data/batch_slice.h"
#include "model/gpu/sharded_embeddings.h"

namespace hetrec::inline model::gpu_model {

DeviceBatchStream::DeviceBatchStream(int num_dense, int num_tables, bool stage_bags, Allocator& device)
    : num_tables_(num_tables), staging_(num_dense, stage_bags ? num_tables : 0, device) {}

void DeviceBatchStream::attach_shards(ShardedGpuEmbeddings* shards, int rank, int ranks) {
  shards_ = shards;
  rank_ = rank;
  ranks_ = ranks;
}

void DeviceBatchStream::begin(bool training) {
  to_stage_ = training ? next_ : nullptr;
  next_ = nullptr;
}

int64_t DeviceBatchStream::take(const Batch& batch, bool training) {
  const bool staged = training && ahead_ && *ahead_ == batch_fingerprint(batch);
  const int64_t b = staged ? packed_samples_ : pack(batch, training);  // an evaluation replaces a batch packed ahead
  ahead_.reset();
  return b;
}

// Packs what the step reads into the staging memory (the host's share of staging);
// returns this rank's sample count. Ids are range-checked on the device (a bad one raises
// the skip flag); the offsets must be sound before anything reads through them.
int64_t DeviceBatchStream::pack(const Batch& batch, bool training) {
  check_bag_offsets(batch, num_tables_);
  int64_t b = batch.size;
  if (shards_) {
    if (batch.size < ranks_)
      throw DataError("batch from sample " + std::to_string(batch.first_sample) + ": " + std::to_string(batch.size) +
                      " samples for " + std::to_string(ranks_) + " GPUs; the data-parallel GPU backend needs at least "
                      "one sample per rank");
    const int64_t begin = share_begin(batch.size, rank_, ranks_);
    b = share_begin(batch.size, rank_ + 1, ranks_) - begin;
    staging_.pack_dense(batch, begin, b, training);
    shards_->pack(batch, begin, b, training);
    packed_global_ = batch.size;
  } else {
    staging_.pack(batch, training);
  }
  packed_samples_ = b;
  return b;
}

bool DeviceBatchStream::copy_to_device(gpu::Stream& copy, gpu::Event& ready, gpu::stream_t compute) {
  bool moved = staging_.copy_packed(copy, ready);
  if (shards_) {
    moved |= shards_->copy_packed(copy, ready, compute);
    device_global_ = packed_global_;
  }
  device_samples_ = packed_samples_;
  return moved;
}

void DeviceBatchStream::stage_next(gpu::Stream& copy) {
  const Batch* next = std::exchange(to_stage_, nullptr);
  if (!next) return;
  try {
    if (next->labels.size() != static_cast<std::size_t>(next->size)) return;
    pack(*next, /*training=*/true);
    ahead_ = batch_fingerprint(*next);
    // Its copies to the device start now, beside the step (into landing buffers: the
    // step reads the step buffers), so the next step starts with device copies only.
    staging_.copy_ahead(copy);
    if (shards_) shards_->copy_ahead(copy);
  } catch (const Error&) {
    ahead_.reset();
  }
}

}  // namespace hetrec::model::gpu_model
