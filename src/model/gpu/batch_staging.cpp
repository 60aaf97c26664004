#include "model/gpu/batch_staging.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "gpu/memory.h"

namespace hetrec::gpu_model {

namespace {
// Capacities grow by this factor, so a stream of slowly growing batches reallocates
// only a few times.
constexpr double kGrowth = 1.25;

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

std::size_t staging_bytes(int64_t samples, int64_t ids, int num_dense, int num_tables) {
  return static_cast<std::size_t>(samples * num_dense + samples) * sizeof(float) +
         static_cast<std::size_t>(samples * num_tables + 1 + ids) * sizeof(int32_t);
}
}  // namespace

BatchStaging::BatchStaging(int num_dense, int num_tables, Allocator& device)
    : num_dense_(num_dense), num_tables_(num_tables), device_alloc_(device) {}

bool BatchStaging::reserve(int64_t samples, int64_t ids) {
  if (samples <= sample_capacity_ && ids <= id_capacity_) return false;
  if (samples > sample_capacity_) sample_capacity_ = samples;
  if (ids > id_capacity_) id_capacity_ = static_cast<int64_t>(static_cast<double>(ids) * kGrowth) + 1;
  if (copies_in_flight_) copies_done_.synchronize();
  staging_ = gpu::PinnedBuffer(staging_bytes(sample_capacity_, id_capacity_, num_dense_, num_tables_));
  dense_ = Tensor::empty({sample_capacity_ * num_dense_ + 1}, DType::f32, device_alloc_);
  labels_ = Tensor::empty({sample_capacity_}, DType::f32, device_alloc_);
  offsets_ = Tensor::empty({sample_capacity_ * num_tables_ + 1}, DType::i32, device_alloc_);
  ids_ = Tensor::empty({id_capacity_}, DType::i32, device_alloc_);
  return true;
}

bool BatchStaging::upload(const Batch& batch, bool with_labels, gpu::Stream& copy_stream, gpu::Event& ready) {
  const int64_t b = batch.size;
  const auto ids = static_cast<int64_t>(batch.ids.size());
  const bool grew = reserve(b, ids);
  if (copies_in_flight_) copies_done_.synchronize();  // the staging memory is about to be rewritten

  char* p = staging_.as<char>();
  const std::size_t dense_bytes = static_cast<std::size_t>(b * num_dense_) * sizeof(float);
  const std::size_t label_bytes = with_labels ? static_cast<std::size_t>(b) * sizeof(float) : 0;
  const std::size_t offset_bytes = static_cast<std::size_t>(b * num_tables_ + 1) * sizeof(int32_t);
  const std::size_t id_bytes = static_cast<std::size_t>(ids) * sizeof(int32_t);
  char* s_dense = p;
  char* s_labels = s_dense + dense_bytes;
  char* s_offsets = s_labels + label_bytes;
  char* s_ids = s_offsets + offset_bytes;
  parallel_copy(s_dense, batch.dense.data(), dense_bytes);
  if (with_labels) std::memcpy(s_labels, batch.labels.data(), label_bytes);
  parallel_copy(s_offsets, batch.offsets.data(), offset_bytes);
  parallel_copy(s_ids, batch.ids.data(), id_bytes);

  const gpu::stream_t s = copy_stream.get();
  gpu::memcpy_async(dense_.raw(), s_dense, dense_bytes, gpu::CopyKind::host_to_device, s);
  if (with_labels) gpu::memcpy_async(labels_.raw(), s_labels, label_bytes, gpu::CopyKind::host_to_device, s);
  gpu::memcpy_async(offsets_.raw(), s_offsets, offset_bytes, gpu::CopyKind::host_to_device, s);
  gpu::memcpy_async(ids_.raw(), s_ids, id_bytes, gpu::CopyKind::host_to_device, s);
  copies_done_.record(s);
  ready.record(s);
  copies_in_flight_ = true;

  device_.size = b;
  device_.dense = dense_.data<float>();
  device_.labels = with_labels ? labels_.data<float>() : nullptr;
  device_.bags.offsets = offsets_.data<int32_t>();
  device_.bags.ids = ids_.data<int32_t>();
  device_.bags.batch = b;
  device_.bags.max_ids = id_capacity_;
  return grew;
}

}  // namespace hetrec::gpu_model
