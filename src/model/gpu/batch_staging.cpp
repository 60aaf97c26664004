#include "model/gpu/batch_staging.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "core/error.h"
#include "gpu/memory.h"
#include "model/gpu/batch_buffer_sizes.h"

namespace hetrec::inline model::gpu_model {

namespace {
// Bytes one thread copies at a time into the staging memory: large batches (tens of MB of
// ids) are packed by all cores, small ones by one.
constexpr std::size_t kCopyChunk = std::size_t{1} << 20;

void parallel_copy(void* dst, const void* src, std::size_t bytes) {
  const auto chunks = static_cast<int64_t>((bytes + kCopyChunk - 1) / kCopyChunk);
#pragma omp parallel for schedule(static) if (chunks > 1)
  for (int64_t c = 0; c < chunks; ++c) {
    const std::size_t begin = static_cast<std::size_t>(c) * kCopyChunk;
    const std::size_t len = std::min(kCopyChunk, bytes - begin);
    std::memcpy(static_cast<char*>(dst) + begin, static_cast<const char*>(src) + begin, len);
  }
}

}  // namespace

BatchStaging::BatchStaging(int num_dense, int num_tables, Allocator& device)
    : num_dense_(num_dense), num_tables_(num_tables), device_alloc_(device) {}

void BatchStaging::wait_for_copies() {
  if (copies_in_flight_) copies_done_.synchronize();
  copies_in_flight_ = false;
}

void BatchStaging::reserve_host(int64_t samples, int64_t ids) {
  wait_for_copies();  // the staging memory is about to be rewritten
  landed_ = false;    // and what landed ahead is no longer the packed batch
  if (samples <= host_samples_ && ids <= host_ids_) return;
  host_samples_ = std::max(samples, host_samples_);
  if (ids > host_ids_) host_ids_ = grown_id_capacity(ids);
  staging_ = gpu::PinnedBuffer(staging_bytes(host_samples_, host_ids_, num_dense_, num_tables_));
}

bool DeviceBatchBuffers::reserve(int64_t need_samples, int64_t need_ids, int64_t id_floor, int num_dense,
                                 int num_tables, Allocator& device) {
  if (need_samples <= samples && need_ids <= ids) return false;
  samples = std::max(need_samples, samples);
  if (need_ids > ids) ids = std::max(need_ids, id_floor);
  dense = Tensor::empty({batch_dense_elements(samples, num_dense)}, DType::f32, device);
  labels = Tensor::empty({batch_label_elements(samples)}, DType::f32, device);
  offsets = Tensor::empty({batch_offset_elements(samples, num_tables)}, DType::i32, device);
  id_list = Tensor::empty({ids}, DType::i32, device);
  return true;
}

void BatchStaging::pack(const Batch& batch, bool with_labels) {
  const int64_t b = batch.size;
  const auto ids = static_cast<int64_t>(batch.ids.size());
  reserve_host(b, ids);
  packed_samples_ = b;
  packed_ids_ = ids;
  packed_labels_ = with_labels;
  packed_dense_bytes_ = static_cast<std::size_t>(b * num_dense_) * sizeof(float);
  packed_label_bytes_ = with_labels ? static_cast<std::size_t>(b) * sizeof(float) : 0;
  packed_offset_bytes_ = static_cast<std::size_t>(b * num_tables_ + 1) * sizeof(int32_t);
  packed_id_bytes_ = static_cast<std::size_t>(ids) * sizeof(int32_t);
  parallel_copy(dense_at(), batch.dense.data(), packed_dense_bytes_);
  if (with_labels) std::memcpy(labels_at(), batch.labels.data(), packed_label_bytes_);
  parallel_copy(offsets_at(), batch.offsets.data(), packed_offset_bytes_);
  parallel_copy(ids_at(), batch.ids.data(), packed_id_bytes_);
}

void BatchStaging::pack_dense(const Batch& batch, int64_t begin, int64_t count, bool with_labels) {
  HETREC_CHECK(num_tables_ == 0 && batch.num_dense == num_dense_ && begin >= 0 && begin + count <= batch.size,
               "dense rows fit the staging");
  reserve_host(count, 0);
  packed_samples_ = count;
  packed_ids_ = 0;
  packed_labels_ = with_labels;
  packed_dense_bytes_ = static_cast<std::size_t>(count * num_dense_) * sizeof(float);
  packed_label_bytes_ = with_labels ? static_cast<std::size_t>(count) * sizeof(float) : 0;
  packed_offset_bytes_ = sizeof(int32_t);
  packed_id_bytes_ = 0;
  parallel_copy(dense_at(), batch.dense.data() + begin * num_dense_, packed_dense_bytes_);
  if (with_labels) std::memcpy(labels_at(), batch.labels.data() + begin, packed_label_bytes_);
  *reinterpret_cast<int32_t*>(offsets_at()) = 0;
}

void BatchStaging::pack_shard_bags(const Batch& global, const std::vector<dist::ShardLookup>& shards, int64_t begin,
                                   int64_t count) {
  HETREC_CHECK(static_cast<int>(shards.size()) == num_tables_ && num_dense_ == 0, "shard bags fit the staging");
  const dist::ShardBagsLayout layout = dist::measure_shard_bags(global, shards, begin, count);
  reserve_host(count, layout.ids());
  packed_samples_ = count;
  packed_ids_ = layout.ids();
  packed_labels_ = false;
  packed_dense_bytes_ = 0;
  packed_label_bytes_ = 0;
  packed_offset_bytes_ = static_cast<std::size_t>(count * num_tables_ + 1) * sizeof(int32_t);
  packed_id_bytes_ = static_cast<std::size_t>(packed_ids_) * sizeof(int32_t);
  dist::write_shard_bags(global, shards, layout, reinterpret_cast<int32_t*>(offsets_at()),
                         reinterpret_cast<int32_t*>(ids_at()));
}

void BatchStaging::copy_to(DeviceBatchBuffers& to, const DeviceBatchBuffers* from_landing, gpu::stream_t s) const {
  const gpu::CopyKind kind = from_landing ? gpu::CopyKind::device_to_device : gpu::CopyKind::host_to_device;
  const auto from = [&](const Tensor DeviceBatchBuffers::*buffer, char* staged) -> const void* {
    return from_landing ? (from_landing->*buffer).raw() : staged;
  };
  gpu::memcpy_async(to.dense.raw(), from(&DeviceBatchBuffers::dense, dense_at()), packed_dense_bytes_, kind, s);
  if (packed_labels_)
    gpu::memcpy_async(to.labels.raw(), from(&DeviceBatchBuffers::labels, labels_at()), packed_label_bytes_, kind, s);
  gpu::memcpy_async(to.offsets.raw(), from(&DeviceBatchBuffers::offsets, offsets_at()), packed_offset_bytes_, kind, s);
  gpu::memcpy_async(to.id_list.raw(), from(&DeviceBatchBuffers::id_list, ids_at()), packed_id_bytes_, kind, s);
}

void BatchStaging::copy_ahead(gpu::Stream& copy_stream) {
  landing_.reserve(packed_samples_, packed_ids_, host_ids_, num_dense_, num_tables_, device_alloc_);
  copy_to(landing_, nullptr, copy_stream.get());
  copies_done_.record(copy_stream.get());
  copies_in_flight_ = true;
  landed_ = true;
}

bool BatchStaging::copy_packed(gpu::Stream& copy_stream, gpu::Event& ready) {
  const bool grew = step_.reserve(packed_samples_, packed_ids_, host_ids_, num_dense_, num_tables_, device_alloc_);
  const gpu::stream_t s = copy_stream.get();
  // From the landing buffers (after copy_ahead's copies, which ran earlier on this stream)
  // or from the page-locked staging memory.
  copy_to(step_, std::exchange(landed_, false) ? &landing_ : nullptr, s);
  copies_done_.record(s);
  ready.record(s);
  copies_in_flight_ = true;

  device_.size = packed_samples_;
  device_.dense = step_.dense.data<float>();
  device_.labels = packed_labels_ ? step_.labels.data<float>() : nullptr;
  device_.bags.offsets = step_.offsets.data<int32_t>();
  device_.bags.ids = step_.id_list.data<int32_t>();
  device_.bags.batch = packed_samples_;
  device_.bags.max_ids = step_.ids;
  return grew;
}

bool BatchStaging::upload(const Batch& batch, bool with_labels, gpu::Stream& copy_stream, gpu::Event& ready) {
  pack(batch, with_labels);
  return copy_packed(copy_stream, ready);
}

}  // namespace hetrec::model::gpu_model
