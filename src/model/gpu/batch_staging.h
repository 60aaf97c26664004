#pragma once
// Moves a host Batch to the device in two steps: pack() copies it into page-locked
// staging memory (the host's share of the work, which the model can do for the next
// batch while the device runs the current step), and copy_packed() copies the packed
// batch asynchronously on a copy stream, with an event marking the copies done, so the
// compute stream waits only for its own inputs. Device buffers keep their addresses
// until a batch outgrows them (which a captured step graph depends on).
#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "data/batch.h"
#include "dist/shard_bags.h"
#include "gpu/device_buffer.h"
#include "gpu/event.h"
#include "gpu/stream.h"
#include "kernels/embedding_types.h"

namespace hetrec::inline model::gpu_model {

struct DeviceBatch {
  int64_t size = 0;
  const float* dense = nullptr;   // size x num_dense
  const float* labels = nullptr;  // size (null when not copied)
  kernels::DeviceBags bags;
};

// One set of device buffers of a batch (dense, labels, offsets, ids) and their capacity.
struct DeviceBatchBuffers {
  int64_t samples = 0, ids = 0;  // capacity
  Tensor dense, labels, offsets, id_list;
  // Room for `need_samples` and `need_ids` (at least `id_floor` ids when it grows).
  // Returns true when the buffers were reallocated (their addresses changed).
  bool reserve(int64_t need_samples, int64_t need_ids, int64_t id_floor, int num_dense, int num_tables,
               Allocator& device);
};

class BatchStaging {
 public:
  BatchStaging(int num_dense, int num_tables, Allocator& device);

  // Packs `batch` (labels too when with_labels) into the staging memory, after the
  // previous copies out of it have finished.
  void pack(const Batch& batch, bool with_labels);
  // Packs the dense features (and labels when with_labels) of samples [begin, begin +
  // count) of `batch`, no bags (a staging built for 0 tables: a rank's share of a global
  // batch whose bags its shards stage).
  void pack_dense(const Batch& batch, int64_t begin, int64_t count, bool with_labels);
  // Packs the bags of `shards` for samples [begin, begin + count) of `global`
  // (dist/shard_bags.h; no dense features, no labels) straight into the staging memory.
  void pack_shard_bags(const Batch& global, const std::vector<dist::ShardLookup>& shards, int64_t begin,
                       int64_t count);
  // Copies the packed batch on `copy_stream` and records `ready` there. Returns true when
  // device buffers had to grow (their addresses changed). A batch already landed
  // (copy_ahead) moves from the landing buffers with device-to-device copies.
  bool copy_packed(gpu::Stream& copy_stream, gpu::Event& ready);
  // Copies the packed batch to landing buffers on `copy_stream` now, while the device may
  // still run a step that reads the step buffers, so that copy_packed later moves it at
  // device speed instead of over the host link. The next pack discards it.
  void copy_ahead(gpu::Stream& copy_stream);
  // pack, then copy_packed.
  bool upload(const Batch& batch, bool with_labels, gpu::Stream& copy_stream, gpu::Event& ready);
  const DeviceBatch& device() const { return device_; }

 private:
  // Room for `samples` and `ids` in the staging memory (reallocated when short).
  void reserve_host(int64_t samples, int64_t ids);
  void wait_for_copies();
  // Copies the packed batch into `to` on `s`: from `from_landing` (device to device) or,
  // when null, from the page-locked staging memory.
  void copy_to(DeviceBatchBuffers& to, const DeviceBatchBuffers* from_landing, gpu::stream_t s) const;
  // Where each part of the packed batch lives in the staging memory.
  char* dense_at() const { return staging_.as<char>(); }
  char* labels_at() const { return dense_at() + packed_dense_bytes_; }
  char* offsets_at() const { return labels_at() + packed_label_bytes_; }
  char* ids_at() const { return offsets_at() + packed_offset_bytes_; }

  int num_dense_;
  int num_tables_;
  Allocator& device_alloc_;
  int64_t host_samples_ = 0, host_ids_ = 0;      // staging memory capacity
  gpu::PinnedBuffer staging_;
  DeviceBatchBuffers step_;     // the step buffers (a captured graph reads them)
  DeviceBatchBuffers landing_;  // copy_ahead's (their addresses may change freely)
  bool landed_ = false;         // whether the landing buffers hold the packed batch
  DeviceBatch device_;
  // The packed batch.
  int64_t packed_samples_ = 0, packed_ids_ = 0;
  bool packed_labels_ = false;
  std::size_t packed_dense_bytes_ = 0, packed_label_bytes_ = 0, packed_offset_bytes_ = 0, packed_id_bytes_ = 0;
  bool copies_in_flight_ = false;
  gpu::Event copies_done_{false};
};

}  // namespace hetrec::model::gpu_model
