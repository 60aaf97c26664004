#include "tunable/embedding_forward/embedding_forward_bench.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "gpu/event.h"
#include "tune/gpu/median_launch_time.h"
#include "tune/gpu/skewed_bags.h"
#include "gpu/memory.h"
#include "kernels/embedding_init.h"

namespace hetrec::tune {

namespace {
// One id in this many of the verification batch is out of range, to check that the
// kernel skips it and counts it.
constexpr int64_t kBadIdEvery = 997;
// Unit roundoff of fp32 (2^-24): a sum of n terms accumulated in fp32 is within
// n * u * sum|x| of the exact sum (Higham, Accuracy and Stability of Numerical
// Algorithms, 2nd ed., section 4.2); twice that covers the mean's scaling.
constexpr double kFp32UnitRoundoff = 0x1.0p-24;

double row_value(const void* weights, DType dtype, int64_t index) {
  switch (dtype) {
    case DType::f32: return static_cast<const float*>(weights)[index];
    case DType::f16: return f16_to_f32(static_cast<const uint16_t*>(weights)[index]);
    case DType::bf16: return bf16_to_f32(static_cast<const uint16_t*>(weights)[index]);
    default: throw InternalError("embedding forward bench: unsupported row dtype");
  }
}
}  // namespace

EmbeddingForwardBench::EmbeddingForwardBench(const std::vector<TableConfig>& tables, int dim, DType row_dtype,
                                             int64_t batch, uint64_t seed, int rotations)
    : tables_(tables) {
  if (tables.empty() || dim <= 0 || batch <= 0 || rotations < 1)
    throw ConfigError("tune: the embedding workload needs tables, a positive dim, batch and rotation count");
  const int T = static_cast<int>(tables.size());
  workload_.shape = {row_dtype, DType::f32, dim};
  workload_.batch = batch;
  workload_.num_tables = T;

  host_row_offsets_.assign(T + 1, 0);
  std::vector<uint8_t> mean(T);
  for (int t = 0; t < T; ++t) {
    host_row_offsets_[t + 1] = host_row_offsets_[t] + tables[t].rows;
    mean[t] = tables[t].pooling == Pooling::mean ? 1 : 0;
  }
  const int64_t total_rows = host_row_offsets_[T];
  const std::size_t row_bytes = static_cast<std::size_t>(dim) * dtype_size(row_dtype);
  weights_ = gpu::DeviceBuffer(static_cast<std::size_t>(total_rows) * row_bytes);
  row_offsets_ = gpu::DeviceBuffer((T + 1) * sizeof(int64_t));
  mean_pooling_ = gpu::DeviceBuffer(T);
  gpu::memcpy_sync(row_offsets_.get(), host_row_offsets_.data(), (T + 1) * sizeof(int64_t),
                   gpu::CopyKind::host_to_device);
  gpu::memcpy_sync(mean_pooling_.get(), mean.data(), T, gpu::CopyKind::host_to_device);
  for (int t = 0; t < T; ++t)
    kernels::embedding_init_uniform(weights_.as<char>() + host_row_offsets_[t] * row_bytes, tables[t].rows, dim,
                                    row_dtype, kernels::embedding_table_init_key(seed, t), stream_.get());
  device_tables_.weights = weights_.get();
  device_tables_.row_offsets = row_offsets_.as<int64_t>();
  device_tables_.mean_pooling = mean_pooling_.as<uint8_t>();
  device_tables_.num_tables = T;
  device_tables_.dim = dim;
  device_tables_.total_rows = total_rows;
  device_tables_.row_dtype = row_dtype;

  for (int r = 0; r < rotations; ++r) {
    SkewedBags sb = make_skewed_bags(tables, batch, seed, 1000 + static_cast<uint64_t>(r), r == 0 ? kBadIdEvery : 0);
    IdBatch b;
    b.host_offsets = std::move(sb.host_offsets);
    b.host_ids = std::move(sb.host_ids);
    b.bad_ids = sb.bad_ids;
    b.offsets = std::move(sb.offsets);
    b.ids = std::move(sb.ids);
    if (r == 0) {
      workload_.total_ids = static_cast<int64_t>(b.host_ids.size());
      std::vector<bool> seen(static_cast<std::size_t>(total_rows), false);
      for (int t = 0; t < T; ++t)
        for (std::size_t p = b.host_offsets[static_cast<std::size_t>(t) * batch];
             p < static_cast<std::size_t>(b.host_offsets[static_cast<std::size_t>(t + 1) * batch]); ++p) {
          const int32_t id = b.host_ids[p];
          if (id < 0 || id >= tables[t].rows) continue;
          const auto row = static_cast<std::size_t>(host_row_offsets_[t] + id);
          if (!seen[row]) {
            seen[row] = true;
            ++workload_.unique_rows;
          }
        }
    }
    batches_.push_back(std::move(b));
  }
  const std::size_t feature_elems = static_cast<std::size_t>(batch) * (T + 1) * dim;
  features_ = gpu::DeviceBuffer(feature_elems * sizeof(float));
  bad_counter_ = gpu::DeviceBuffer(sizeof(int32_t));
  stream_.synchronize();

  // The reference of the first batch, in double, from the rows as stored.
  std::vector<char> host_weights(weights_.bytes());
  gpu::memcpy_sync(host_weights.data(), weights_.get(), host_weights.size(), gpu::CopyKind::device_to_host);
  const IdBatch& b0 = batches_[0];
  reference_.assign(static_cast<std::size_t>(batch) * T * dim, 0.0);
  error_bound_.assign(reference_.size(), 0.0);
#pragma omp parallel for schedule(static)
  for (int64_t s = 0; s < batch; ++s)
    for (int t = 0; t < T; ++t) {
      const std::size_t bag = static_cast<std::size_t>(t) * batch + s;
      const int32_t begin = b0.host_offsets[bag], end = b0.host_offsets[bag + 1];
      double* ref = &reference_[(static_cast<std::size_t>(s) * T + t) * dim];
      double* bound = &error_bound_[(static_cast<std::size_t>(s) * T + t) * dim];
      int valid = 0;
      for (int32_t p = begin; p < end; ++p) {
        const int32_t id = b0.host_ids[p];
        if (id < 0 || id >= tables[t].rows) continue;
        ++valid;
        const int64_t row = host_row_offsets_[t] + id;
        for (int d = 0; d < dim; ++d) {
          const double v = row_value(host_weights.data(), row_dtype, row * dim + d);
          ref[d] += v;
          bound[d] += std::fabs(v);
        }
      }
      const int count = end - begin;
      const double scale = (tables[t].pooling == Pooling::mean && count > 0) ? 1.0 / count : 1.0;
      for (int d = 0; d < dim; ++d) {
        ref[d] *= scale;
        bound[d] = 2.0 * (valid + 1) * kFp32UnitRoundoff * bound[d] * scale;
      }
    }
}

std::string EmbeddingForwardBench::describe() const {
  const double gb = embedding_forward_bytes(workload_) / 1e9;
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "%d tables, %lld rows, batch %lld, %lld ids (%lld distinct rows), %s, %.3f GB through HBM at least",
                workload_.num_tables, static_cast<long long>(host_row_offsets_.back()),
                static_cast<long long>(workload_.batch), static_cast<long long>(workload_.total_ids),
                static_cast<long long>(workload_.unique_rows), workload_.shape.key().c_str(), gb);
  return buf;
}

kernels::DeviceBags EmbeddingForwardBench::bags(const IdBatch& b) const {
  kernels::DeviceBags d;
  d.offsets = b.offsets.as<int32_t>();
  d.ids = b.ids.as<int32_t>();
  d.batch = workload_.batch;
  d.max_ids = static_cast<int64_t>(b.host_ids.size());
  return d;
}

kernels::PooledView EmbeddingForwardBench::pooled() const {
  kernels::PooledView p;
  p.data = features_.as<float>() + workload_.shape.dim;  // slot 0 is the bottom MLP's
  p.row_stride = static_cast<int64_t>(workload_.num_tables + 1) * workload_.shape.dim;
  p.dtype = DType::f32;
  return p;
}

ForwardCheck EmbeddingForwardBench::verify(const ForwardLaunch& launch) {
  ForwardCheck c;
  gpu::memset_async(features_.get(), 0xFF, features_.bytes(), stream_.get());  // NaN everywhere
  gpu::memset_async(bad_counter_.get(), 0, sizeof(int32_t), stream_.get());
  launch(device_tables_, bags(batches_[0]), pooled(), bad_counter_.as<int32_t>(), stream_.get());
  stream_.synchronize();
  const int T = workload_.num_tables, dim = workload_.shape.dim;
  // Page-locked and kept between calls: it is large and copied back for every candidate.
  if (host_features_.empty()) host_features_ = gpu::PinnedBuffer(features_.bytes());
  const float* out = host_features_.as<float>();
  gpu::memcpy_sync(host_features_.get(), features_.get(), features_.bytes(), gpu::CopyKind::device_to_host);
  int32_t bad = 0;
  gpu::memcpy_sync(&bad, bad_counter_.get(), sizeof bad, gpu::CopyKind::device_to_host);
  if (bad != batches_[0].bad_ids) {
    c.reason = "counted " + std::to_string(bad) + " out-of-range ids, expected " + std::to_string(batches_[0].bad_ids);
    return c;
  }
  // Per sample in parallel; the first failure by index is reported.
  int64_t first_bad = -1;
  int64_t first_slot = -1;
  double max_err = 0.0;
  uint32_t poison = 0;
  std::memset(&poison, 0xFF, sizeof poison);
#pragma omp parallel for schedule(static) reduction(max : max_err)
  for (int64_t s = 0; s < workload_.batch; ++s) {
    const float* row = &out[static_cast<std::size_t>(s) * (T + 1) * dim];
    bool slot_ok = true;
    for (int d = 0; d < dim; ++d) {
      uint32_t bits = 0;
      std::memcpy(&bits, &row[d], sizeof bits);
      slot_ok = slot_ok && bits == poison;
    }
    int64_t bad_here = -1;
    for (int64_t i = 0; i < static_cast<int64_t>(T) * dim; ++i) {
      const std::size_t r = static_cast<std::size_t>(s) * T * dim + i;
      const double err = std::fabs(static_cast<double>(row[dim + i]) - reference_[r]);
      if (!(err <= error_bound_[r]) && bad_here < 0) bad_here = static_cast<int64_t>(r);  // NaN fails too
      max_err = std::max(max_err, std::isfinite(err) ? err : INFINITY);
    }
    if (!slot_ok || bad_here >= 0) {
#pragma omp critical(hetrec_forward_verify)
      {
        if (!slot_ok && (first_slot < 0 || s < first_slot)) first_slot = s;
        if (bad_here >= 0 && (first_bad < 0 || bad_here < first_bad)) first_bad = bad_here;
      }
    }
  }
  if (first_slot >= 0) {
    c.reason = "wrote into the bottom MLP's slot of sample " + std::to_string(first_slot);
    return c;
  }
  c.max_abs_error = max_err;
  if (first_bad >= 0) {
    const int64_t s = first_bad / (static_cast<int64_t>(T) * dim);
    const int t = static_cast<int>((first_bad / dim) % T);
    const int d = static_cast<int>(first_bad % dim);
    const double got = out[static_cast<std::size_t>(s) * (T + 1) * dim + dim + static_cast<std::size_t>(t) * dim + d];
    char buf[256];
    std::snprintf(buf, sizeof buf, "sample %lld table %d element %d: got %.9g, reference %.9g (bound %.3g)",
                  static_cast<long long>(s), t, d, got, reference_[first_bad], error_bound_[first_bad]);
    c.reason = std::string("differs from the reference: ") + buf;
    return c;
  }
  c.ok = true;
  return c;
}

double EmbeddingForwardBench::median_us(const ForwardLaunch& launch, int reps) {
  const kernels::PooledView out = pooled();
  return median_launch_us(stream_, reps, [&](int i) {
    const IdBatch& b = i < 0 ? batches_.back() : batches_[static_cast<std::size_t>(i) % batches_.size()];
    launch(device_tables_, bags(b), out, bad_counter_.as<int32_t>(), stream_.get());
  });
}

}  // namespace hetrec::tune
