#include "tunable/sparse_update/sparse_update_bench.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "core/error.h"
#include "gpu/event.h"
#include "tune/gpu/median_launch_time.h"
#include "tune/gpu/skewed_bags.h"
#include "gpu/memory.h"
#include "kernels/embedding_bag_backward.h"
#include "kernels/embedding_init.h"
#include "kernels/long_rows.h"
#include "kernels/row_gather.h"
#include "kernels/step_scalars.h"

namespace hetrec::tune {

namespace {
// One id in this many of the verified batch is out of range, to check that the update
// skips it.
constexpr int64_t kBadIdEvery = 997;
// The optimizer state every row starts from: positive (a square root's argument), and
// not zero, so that a variant which ignores the stored state fails.
constexpr float kInitialAccumulator = 0.01f;
// The step the scalars carry: it keys the stochastic rounding of 16-bit rows.
constexpr int64_t kStep = 17;
// Touched rows checked per verification: enough to cover every table and many hot rows,
// few enough to restore, copy back and check per candidate in milliseconds.
constexpr int64_t kCheckedTouchedRows = int64_t{1} << 16;
// Unit roundoff of fp32 (2^-24): a sum of n terms accumulated in fp32 is within
// n * u * sum|x| of the exact sum (Higham, Accuracy and Stability of Numerical
// Algorithms, 2nd ed., section 4.2); twice that covers the mean's scaling.
constexpr double kFp32UnitRoundoff = 0x1.0p-24;
// Relative error of the fp32 update rule's few operations (a product, a square root, a
// division, a subtraction), as kernels/test_embedding_bag.cpp bounds them.
constexpr double kRuleRelError = 2e-6;
constexpr double kStepRelError = 1e-5;
constexpr double kAbsFloor = 1e-8;       // of a row element, as kernels/test_embedding_bag.cpp
constexpr double kStateAbsFloor = 1e-9;  // of an accumulator, likewise
// Stochastic rounding may land on either neighbour of the exact value: one unit of the
// format at x is at most |x| 2^-7 (bf16) or |x| 2^-10 (fp16), 2^-24 among fp16's
// subnormals; the slack covers the exact value lying on a unit's boundary.
constexpr double kNeighbourSlack = 1.01;

double unit16(DType dtype, double x) {
  if (dtype == DType::bf16) return std::fabs(x) * std::ldexp(1.0, -7);
  if (dtype == DType::f16) return std::max(std::fabs(x) * std::ldexp(1.0, -10), std::ldexp(1.0, -24));
  return 0.0;
}

float stored_value(const void* rows, DType dtype, std::size_t index) {
  switch (dtype) {
    case DType::f32: return static_cast<const float*>(rows)[index];
    case DType::f16: return f16_to_f32(static_cast<const uint16_t*>(rows)[index]);
    case DType::bf16: return bf16_to_f32(static_cast<const uint16_t*>(rows)[index]);
    default: throw InternalError("sparse update bench: unsupported row dtype");
  }
}

// Optimizer state floats per row.
int64_t state_floats(kernels::SparseOptimizerKind kind, int dim) {
  switch (kind) {
    case kernels::SparseOptimizerKind::sgd: return 0;
    case kernels::SparseOptimizerKind::rowwise_adagrad: return 1;
    case kernels::SparseOptimizerKind::adagrad: return dim;
  }
  return 0;
}
}  // namespace

SparseUpdateBench::SparseUpdateBench(const std::vector<TableConfig>& tables, int dim, DType row_dtype,
                                     const SparseUpdateRule& rule, int64_t batch, uint64_t seed, int rotations)
    : tables_(tables), rule_(rule) {
  if (tables.empty() || dim <= 0 || batch <= 0 || rotations < 1)
    throw ConfigError("tune: the sparse update workload needs tables, a positive dim, batch and rotation count");
  if (!(rule.lr > 0.0f))
    throw ConfigError("tune: the sparse update's check needs a positive learning rate (optim.sparse_lr)");
  const int T = static_cast<int>(tables.size());
  workload_.shape = {row_dtype, dim, rule.kind};
  workload_.batch = batch;
  workload_.num_tables = T;

  std::vector<int64_t> row_offsets(T + 1, 0);
  std::vector<uint8_t> mean(T);
  for (int t = 0; t < T; ++t) {
    row_offsets[t + 1] = row_offsets[t] + tables[t].rows;
    mean[t] = tables[t].pooling == Pooling::mean ? 1 : 0;
  }
  total_rows_ = row_offsets[T];
  const std::size_t row_bytes = static_cast<std::size_t>(dim) * dtype_size(row_dtype);
  const int64_t state = state_floats(rule.kind, dim);
  weights_ = gpu::DeviceBuffer(static_cast<std::size_t>(total_rows_) * row_bytes);
  accumulators_ = gpu::DeviceBuffer(std::max<std::size_t>(1, static_cast<std::size_t>(total_rows_ * state)) * sizeof(float));
  row_offsets_ = gpu::DeviceBuffer((T + 1) * sizeof(int64_t));
  mean_pooling_ = gpu::DeviceBuffer(T);
  gpu::memcpy_sync(row_offsets_.get(), row_offsets.data(), (T + 1) * sizeof(int64_t), gpu::CopyKind::host_to_device);
  gpu::memcpy_sync(mean_pooling_.get(), mean.data(), T, gpu::CopyKind::host_to_device);
  for (int t = 0; t < T; ++t)
    kernels::embedding_init_uniform(weights_.as<char>() + row_offsets[t] * row_bytes, tables[t].rows, dim, row_dtype,
                                    kernels::embedding_table_init_key(seed, t), stream_.get());
  if (state > 0) kernels::fill_f32(accumulators_.as<float>(), total_rows_ * state, kInitialAccumulator, stream_.get());
  const kernels::StepScalars scalars = kernels::make_step_scalars(rule.lr, 0.0, 0.0, 0.0, kStep);
  scalars_ = gpu::DeviceBuffer(sizeof scalars);
  gpu::memcpy_sync(scalars_.get(), &scalars, sizeof scalars, gpu::CopyKind::host_to_device);

  device_tables_.weights = weights_.get();
  device_tables_.row_offsets = row_offsets_.as<int64_t>();
  device_tables_.mean_pooling = mean_pooling_.as<uint8_t>();
  device_tables_.num_tables = T;
  device_tables_.dim = dim;
  device_tables_.total_rows = total_rows_;
  device_tables_.row_dtype = row_dtype;
  optimizer_.kind = rule.kind;
  optimizer_.eps = rule.eps;
  optimizer_.accumulators = state > 0 ? accumulators_.as<float>() : nullptr;
  optimizer_.seed = seed;
  optimizer_.scalars = scalars_.as<kernels::StepScalars>();

  // Bags as the embedding forward's workload (tune/gpu/skewed_bags.h).
  const int64_t grad_stride = static_cast<int64_t>(T) * dim;
  for (int r = 0; r < rotations; ++r) {
    SkewedBags sb = make_skewed_bags(tables, batch, seed, 1000 + static_cast<uint64_t>(r), r == 0 ? kBadIdEvery : 0);
    UpdateBatch b;
    b.host_offsets = std::move(sb.host_offsets);
    b.host_ids = std::move(sb.host_ids);
    b.offsets = std::move(sb.offsets);
    b.ids = std::move(sb.ids);
    // Pooled gradients uniform in [-sqrt(1/B), sqrt(1/B)], one row of T x dim per sample.
    b.grad = gpu::DeviceBuffer(static_cast<std::size_t>(batch * grad_stride) * sizeof(float));
    kernels::embedding_init_uniform(b.grad.get(), batch, static_cast<int>(grad_stride), DType::f32,
                                    kernels::embedding_table_init_key(seed, T + 1 + r), stream_.get());
    b.bags.offsets = b.offsets.as<int32_t>();
    b.bags.ids = b.ids.as<int32_t>();
    b.bags.batch = batch;
    b.bags.max_ids = static_cast<int64_t>(b.host_ids.size());
    const std::size_t ws = kernels::embedding_backward_workspace_bytes(b.bags.max_ids, dim);
    b.workspace = gpu::DeviceBuffer(ws);
    // The engine's own preparation, once: only the update is verified and timed.
    b.plan = kernels::embedding_backward_prepare(device_tables_, b.bags, b.grad.as<float>(), grad_stride, optimizer_,
                                                 b.workspace.get(), ws, stream_.get());
    batches_.push_back(std::move(b));
  }
  stream_.synchronize();

  // The first batch's occurrences by row, in input order within a row (as the stable
  // device sort leaves them): (global row << 32) | position.
  const UpdateBatch& b0 = batches_[0];
  std::vector<uint64_t> occ;
  occ.reserve(b0.host_ids.size());
  for (int t = 0; t < T; ++t)
    for (int32_t p = b0.host_offsets[static_cast<std::size_t>(t) * batch];
         p < b0.host_offsets[static_cast<std::size_t>(t + 1) * batch]; ++p) {
      const int32_t id = b0.host_ids[static_cast<std::size_t>(p)];
      if (id < 0 || id >= tables[t].rows) continue;
      occ.push_back(static_cast<uint64_t>(row_offsets[t] + id) << 32 | static_cast<uint32_t>(p));
    }
  std::sort(occ.begin(), occ.end());
  std::vector<std::size_t> seg_begin;  // per unique row: its first entry in occ
  for (std::size_t i = 0; i < occ.size(); ++i)
    if (i == 0 || (occ[i] >> 32) != (occ[i - 1] >> 32)) seg_begin.push_back(i);
  seg_begin.push_back(occ.size());
  const int64_t unique = static_cast<int64_t>(seg_begin.size()) - 1;
  workload_.total_ids = static_cast<int64_t>(occ.size());
  workload_.unique_rows = unique;
  std::vector<int64_t> long_rows;
  for (int64_t u = 0; u < unique; ++u) {
    const auto len = static_cast<uint32_t>(seg_begin[u + 1] - seg_begin[u]);
    const uint32_t chunks = kernels::long_row_chunks(len);
    if (chunks == 0) workload_.short_occurrences += len;
    else {
      workload_.long_row_chunks += chunks;
      long_rows.push_back(u);
    }
  }

  // The checked rows: up to a quarter of the sample from the long rows, the rest evenly
  // over all touched rows; then every untouched row right after a checked one.
  std::vector<int64_t> sample;  // indices of unique rows
  const int64_t long_take = std::min<int64_t>(static_cast<int64_t>(long_rows.size()), kCheckedTouchedRows / 4);
  for (int64_t i = 0; i < long_take; ++i)
    sample.push_back(long_rows[static_cast<std::size_t>(i * static_cast<int64_t>(long_rows.size()) / long_take)]);
  const int64_t even_take = std::min<int64_t>(unique, kCheckedTouchedRows - long_take);
  for (int64_t i = 0; i < even_take; ++i) sample.push_back(i * unique / even_take);
  std::sort(sample.begin(), sample.end());
  sample.erase(std::unique(sample.begin(), sample.end()), sample.end());
  for (int64_t u : sample) checked_rows_.push_back(static_cast<int64_t>(occ[seg_begin[u]] >> 32));
  checked_touched_ = static_cast<int64_t>(checked_rows_.size());
  for (int64_t i = 0; i < checked_touched_; ++i) {
    const int64_t next = checked_rows_[i] + 1;
    const bool touched_next = sample[i] + 1 < unique && static_cast<int64_t>(occ[seg_begin[sample[i] + 1]] >> 32) == next;
    if (next < total_rows_ && !touched_next) checked_rows_.push_back(next);
  }
  const auto n = static_cast<int64_t>(checked_rows_.size());
  checked_index_ = gpu::DeviceBuffer(n * sizeof(int64_t));
  gpu::memcpy_sync(checked_index_.get(), checked_rows_.data(), n * sizeof(int64_t), gpu::CopyKind::host_to_device);
  snapshot_rows_ = gpu::DeviceBuffer(n * row_bytes);
  readback_rows_ = gpu::DeviceBuffer(n * row_bytes);
  snapshot_state_ = gpu::DeviceBuffer(std::max<int64_t>(1, n * state) * sizeof(float));
  readback_state_ = gpu::DeviceBuffer(std::max<int64_t>(1, n * state) * sizeof(float));
  kernels::gather_rows(weights_.get(), row_bytes, checked_index_.as<int64_t>(), n, snapshot_rows_.get(), stream_.get());
  if (state > 0)
    kernels::gather_rows(accumulators_.get(), state * sizeof(float), checked_index_.as<int64_t>(), n,
                         snapshot_state_.get(), stream_.get());
  stream_.synchronize();
  std::vector<char> raw(n * row_bytes);
  gpu::memcpy_sync(raw.data(), snapshot_rows_.get(), raw.size(), gpu::CopyKind::device_to_host);
  initial_rows_.resize(static_cast<std::size_t>(n) * dim);
  for (std::size_t i = 0; i < initial_rows_.size(); ++i) initial_rows_[i] = stored_value(raw.data(), row_dtype, i);
  initial_state_.resize(static_cast<std::size_t>(n * state));
  if (state > 0)
    gpu::memcpy_sync(initial_state_.data(), snapshot_state_.get(), initial_state_.size() * sizeof(float),
                     gpu::CopyKind::device_to_host);

  // The double-precision reference of the checked touched rows: per row the summed
  // gradient of its occurrences (scaled by 1 / bag length for mean pooling), then the
  // rule. g_abs (the sum of the contributions' magnitudes) bounds the fp32 summation
  // error over the longest serial chain the device adds (a chunk and the chunk sums).
  std::vector<float> grad(static_cast<std::size_t>(batch * grad_stride));
  gpu::memcpy_sync(grad.data(), b0.grad.get(), grad.size() * sizeof(float), gpu::CopyKind::device_to_host);
  expect_rows_.assign(static_cast<std::size_t>(checked_touched_) * dim, 0.0);
  tol_rows_.assign(expect_rows_.size(), 0.0);
  expect_state_.assign(static_cast<std::size_t>(checked_touched_ * state), 0.0);
  tol_state_.assign(expect_state_.size(), 0.0);
  const double lr = rule.lr, eps = rule.eps;
#pragma omp parallel for schedule(dynamic, 64)
  for (int64_t i = 0; i < checked_touched_; ++i) {
    const int64_t u = sample[static_cast<std::size_t>(i)];
    const std::size_t first = seg_begin[u], last = seg_begin[u + 1];
    const auto len = static_cast<uint32_t>(last - first);
    const uint32_t chunks = kernels::long_row_chunks(len);
    const double chain = chunks == 0 ? len : kernels::long_row_chunk_length(len) + chunks;
    std::vector<double> g(dim, 0.0), g_abs(dim, 0.0);
    for (std::size_t k = first; k < last; ++k) {
      const auto p = static_cast<int32_t>(occ[k] & 0xFFFFFFFFu);
      const auto it = std::upper_bound(b0.host_offsets.begin(), b0.host_offsets.end(), p);
      const int64_t bag = (it - b0.host_offsets.begin()) - 1;
      const int t = static_cast<int>(bag / batch);
      const int64_t s = bag - static_cast<int64_t>(t) * batch;
      const int32_t bag_len = b0.host_offsets[bag + 1] - b0.host_offsets[bag];
      const double scale = mean[t] ? 1.0 / bag_len : 1.0;
      const float* src = &grad[static_cast<std::size_t>(s * grad_stride + static_cast<int64_t>(t) * dim)];
      for (int d = 0; d < dim; ++d) {
        const double c = scale * src[d];
        g[d] += c;
        g_abs[d] += std::fabs(c);
      }
    }
    std::vector<double> g_tol(dim);
    for (int d = 0; d < dim; ++d) g_tol[d] = 2.0 * (chain + 1) * kFp32UnitRoundoff * g_abs[d];
    double acc_row = 0.0;
    if (rule.kind == kernels::SparseOptimizerKind::rowwise_adagrad) {
      double sq = 0.0, sq_err = 0.0;
      for (int d = 0; d < dim; ++d) {
        sq += g[d] * g[d];
        sq_err += 2.0 * std::fabs(g[d]) * g_tol[d] + g_tol[d] * g_tol[d];
      }
      const double a0 = initial_state_[static_cast<std::size_t>(i)];
      acc_row = a0 + sq / dim;
      expect_state_[static_cast<std::size_t>(i)] = acc_row;
      tol_state_[static_cast<std::size_t>(i)] =
          kRuleRelError * acc_row + (2.0 * (dim + 1) * kFp32UnitRoundoff * sq + sq_err) / dim + kStateAbsFloor;
    }
    for (int d = 0; d < dim; ++d) {
      const std::size_t e = static_cast<std::size_t>(i) * dim + d;
      double step = 0.0, sensitivity = lr;  // |d step / d g|
      switch (rule.kind) {
        case kernels::SparseOptimizerKind::sgd: step = lr * g[d]; break;
        case kernels::SparseOptimizerKind::adagrad: {
          const double a0 = initial_state_[e];
          const double a = a0 + g[d] * g[d];
          expect_state_[e] = a;
          tol_state_[e] = kRuleRelError * a + 2.0 * std::fabs(g[d]) * g_tol[d] + g_tol[d] * g_tol[d] + kStateAbsFloor;
          step = lr * g[d] / (std::sqrt(a) + eps);
          sensitivity = lr / std::sqrt(a0);
          break;
        }
        case kernels::SparseOptimizerKind::rowwise_adagrad:
          step = lr * g[d] / (std::sqrt(acc_row) + eps);
          sensitivity = lr / std::sqrt(acc_row);
          break;
      }
      const double expect = initial_rows_[e] - step;
      expect_rows_[e] = expect;
      tol_rows_[e] = kRuleRelError * std::fabs(expect) + kStepRelError * std::fabs(step) + sensitivity * g_tol[d] +
                     kNeighbourSlack * unit16(row_dtype, expect) + kAbsFloor;
    }
  }
}

std::string SparseUpdateBench::describe() const {
  const double gb = sparse_update_bytes(workload_) / 1e9;
  char buf[400];
  std::snprintf(buf, sizeof buf,
                "%d tables, %lld rows, batch %lld, %lld valid ids, %lld distinct rows (%lld chunk sums of long rows), "
                "%s, %.3f GB through HBM at least; %lld rows checked",
                workload_.num_tables, static_cast<long long>(total_rows_), static_cast<long long>(workload_.batch),
                static_cast<long long>(workload_.total_ids), static_cast<long long>(workload_.unique_rows),
                static_cast<long long>(workload_.long_row_chunks), workload_.shape.key().c_str(), gb,
                static_cast<long long>(checked_rows_.size()));
  return buf;
}

void SparseUpdateBench::run(const UpdateLaunch& launch, const UpdateBatch& b) {
  launch(device_tables_, b.bags, b.grad.as<float>(), static_cast<int64_t>(workload_.num_tables) * workload_.shape.dim,
         optimizer_, b.plan, stream_.get());
}

ForwardCheck SparseUpdateBench::verify(const UpdateLaunch& launch) {
  ForwardCheck c;
  const int dim = workload_.shape.dim;
  const DType dtype = workload_.shape.row_dtype;
  const std::size_t row_bytes = static_cast<std::size_t>(dim) * dtype_size(dtype);
  const int64_t state = state_floats(rule_.kind, dim);
  const auto n = static_cast<int64_t>(checked_rows_.size());
  const int64_t* index = checked_index_.as<int64_t>();
  // The checked rows and their state as they were before any run, then the update.
  kernels::scatter_rows(snapshot_rows_.get(), row_bytes, index, n, weights_.get(), stream_.get());
  if (state > 0)
    kernels::scatter_rows(snapshot_state_.get(), state * sizeof(float), index, n, accumulators_.get(), stream_.get());
  run(launch, batches_[0]);
  kernels::gather_rows(weights_.get(), row_bytes, index, n, readback_rows_.get(), stream_.get());
  if (state > 0)
    kernels::gather_rows(accumulators_.get(), state * sizeof(float), index, n, readback_state_.get(), stream_.get());
  stream_.synchronize();
  std::vector<char> raw(n * row_bytes), raw0(n * row_bytes);
  gpu::memcpy_sync(raw.data(), readback_rows_.get(), raw.size(), gpu::CopyKind::device_to_host);
  gpu::memcpy_sync(raw0.data(), snapshot_rows_.get(), raw0.size(), gpu::CopyKind::device_to_host);
  std::vector<float> st(static_cast<std::size_t>(n * state)), st0(st.size());
  if (state > 0) {
    gpu::memcpy_sync(st.data(), readback_state_.get(), st.size() * sizeof(float), gpu::CopyKind::device_to_host);
    gpu::memcpy_sync(st0.data(), snapshot_state_.get(), st0.size() * sizeof(float), gpu::CopyKind::device_to_host);
  }
  // Untouched rows beside the checked ones: bit for bit as before.
  for (int64_t i = checked_touched_; i < n; ++i) {
    if (std::memcmp(&raw[i * row_bytes], &raw0[i * row_bytes], row_bytes) != 0 ||
        (state > 0 && std::memcmp(&st[i * state], &st0[i * state], state * sizeof(float)) != 0)) {
      c.reason = "row " + std::to_string(checked_rows_[i]) + ", which the batch does not touch, changed";
      return c;
    }
  }
  double max_err = 0.0;
  for (int64_t i = 0; i < checked_touched_; ++i) {
    for (int64_t k = 0; k < state && rule_.kind != kernels::SparseOptimizerKind::sgd; ++k) {
      const std::size_t e = static_cast<std::size_t>(i * state + k);
      const double err = std::fabs(static_cast<double>(st[e]) - expect_state_[e]);
      if (!(err <= tol_state_[e])) {
        char buf[256];
        std::snprintf(buf, sizeof buf, "row %lld state %lld: got %.9g, reference %.9g (bound %.3g)",
                      static_cast<long long>(checked_rows_[i]), static_cast<long long>(k), st[e], expect_state_[e],
                      tol_state_[e]);
        c.reason = std::string("optimizer state differs from the reference: ") + buf;
        return c;
      }
    }
    for (int d = 0; d < dim; ++d) {
      const std::size_t e = static_cast<std::size_t>(i) * dim + d;
      const double got = stored_value(raw.data(), dtype, e);
      const double err = std::fabs(got - expect_rows_[e]);
      max_err = std::max(max_err, std::isfinite(err) ? err : INFINITY);
      if (!(err <= tol_rows_[e])) {  // NaN fails too
        char buf[256];
        std::snprintf(buf, sizeof buf, "row %lld element %d: got %.9g, reference %.9g (bound %.3g)",
                      static_cast<long long>(checked_rows_[i]), d, got, expect_rows_[e], tol_rows_[e]);
        c.reason = std::string("row differs from the reference: ") + buf;
        c.max_abs_error = max_err;
        return c;
      }
    }
  }
  c.max_abs_error = max_err;
  c.ok = true;
  return c;
}

double SparseUpdateBench::median_us(const UpdateLaunch& launch, int reps) {
  return median_launch_us(stream_, reps, [&](int i) {
    run(launch, i < 0 ? batches_.back() : batches_[static_cast<std::size_t>(i) % batches_.size()]);
  });
}

}  // namespace hetrec::tune
