#include "core/seed_streams.h"
#include "nn/embedding_collection.h"

#include <omp.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <string>

#include "core/dtype.h"
#include "core/error.h"
#include "core/rng.h"
#include "optim/sparse_row_storage.h"
#include "optim/sparse_update.h"

namespace hetrec::inline nn {
namespace {

// Keeps the initialisation draws apart from other streams of the seed.

// Radix sort of (id, sample) keys: 11-bit digits give a 2048-entry (8 KB) histogram
// that stays in L1, and 3 passes cover the 26 bits of a 40M-row table.
constexpr int kMaxDigitBits = 11;
constexpr int64_t kRadixBuckets = int64_t{1} << kMaxDigitBits;
// Below this many keys a comparison sort is cheaper than clearing the histograms.
constexpr int64_t kComparisonSortMax = 256;
// Unique rows handed to a thread at a time in the update loop (rows differ in how many
// occurrences they sum, so the schedule is dynamic).
constexpr int kRowsPerChunk = 32;

// Rows are prefetched this many ids (forward) or unique rows (update) ahead. Measured on
// the reference table layout capped at 1M rows (batch 2048, dim 16, one core): about 20%
// faster than no prefetch in both directions; 4 to 16 ahead perform alike.
constexpr int64_t kPrefetchAhead = 8;
constexpr int64_t kCacheLine = 64;  // bytes, x86-64 and AArch64 server cores

// Ids are int32 (data/batch.h), so a table can address at most 2^31 rows.
constexpr int64_t kMaxRows = int64_t{1} << 31;

inline void prefetch_row(const void* row, int64_t bytes) {
  const char* p = static_cast<const char*>(row);
  for (int64_t off = 0; off < bytes; off += kCacheLine) __builtin_prefetch(p + off);
}

template <class Rows>
void init_rows(Tensor& weight, int64_t rows, int dim, uint64_t table_key, const TableOrigin& origin) {
  using Storage = typename Rows::Storage;
  Storage* base = weight.data<Storage>();
  // DLRM reference initialisation: uniform(-sqrt(1/rows), sqrt(1/rows)) over the full table.
  const double bound = std::sqrt(1.0 / static_cast<double>(origin.full_rows));
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    Rng rng(table_key, static_cast<uint64_t>(r + origin.row_offset));
    rng.set_counter(static_cast<uint64_t>(origin.col_offset));  // skip the columns before the block
    Storage* row = base + r * dim;
    for (int d = 0; d < dim; ++d)
      row[d] = Rows::store_nearest(static_cast<float>((2.0 * rng.uniform() - 1.0) * bound));
  }
}

// Stable LSD radix sort of keys[0, n) by their high 32 bits (ids below `rows`); keys that
// share an id keep their order, which is ascending sample. Result in `keys`.
void sort_by_row_id(uint64_t* keys, uint64_t* scratch, int64_t n, int64_t rows, uint32_t* histogram) {
  if (n < 2) return;
  const int id_bits = static_cast<int>(std::bit_width(static_cast<uint64_t>(rows - 1)));
  if (id_bits == 0) return;  // a one-row table: already in sample order
  if (n <= kComparisonSortMax) {
    std::sort(keys, keys + n);  // the same order: equal keys are identical values
    return;
  }
  const int passes = (id_bits + kMaxDigitBits - 1) / kMaxDigitBits;
  const int digit_bits = (id_bits + passes - 1) / passes;
  const uint64_t mask = (uint64_t{1} << digit_bits) - 1;
  const int64_t buckets = int64_t{1} << digit_bits;
  uint64_t* src = keys;
  uint64_t* dst = scratch;
  for (int p = 0; p < passes; ++p) {
    const int shift = 32 + p * digit_bits;
    std::fill(histogram, histogram + buckets, 0u);
    for (int64_t i = 0; i < n; ++i) ++histogram[(src[i] >> shift) & mask];
    uint32_t running = 0;
    for (int64_t b = 0; b < buckets; ++b) {
      const uint32_t count = histogram[b];
      histogram[b] = running;
      running += count;
    }
    for (int64_t i = 0; i < n; ++i) dst[histogram[(src[i] >> shift) & mask]++] = src[i];
    std::swap(src, dst);
  }
  if (src != keys) std::copy(src, src + n, keys);
}

}  // namespace

namespace {
std::vector<TableOrigin> whole_tables(const EmbeddingSpec& spec) {
  std::vector<TableOrigin> origins(spec.tables.size());
  for (std::size_t t = 0; t < origins.size(); ++t) origins[t] = {static_cast<int>(t), 0, spec.tables[t].rows, 0};
  return origins;
}
}  // namespace

EmbeddingCollection::EmbeddingCollection(const EmbeddingSpec& spec, const OptimConfig& optim, uint64_t seed)
    : EmbeddingCollection(spec, optim, seed, whole_tables(spec)) {}

EmbeddingCollection::EmbeddingCollection(const EmbeddingSpec& spec, const OptimConfig& optim, uint64_t seed,
                                         std::vector<TableOrigin> origins)
    : dim_(spec.dim), row_dtype_(spec.row_dtype), optim_(optim), seed_(seed) {
  HETREC_CHECK(origins.size() == spec.tables.size(), "one origin per table");
  if (row_dtype_ != DType::f32 && row_dtype_ != DType::f16 && row_dtype_ != DType::bf16)
    throw ConfigError("model.row_dtype: expected \"fp32\", \"fp16\" or \"bf16\" for the embedding rows, got \"" +
                      std::string(dtype_name(row_dtype_)) + "\"");
  if (dim_ <= 0)
    throw ConfigError("model.embedding_dim: expected a positive integer, got " + std::to_string(dim_));
  check_sparse_optimizer(optim_.sparse);

  tables_.reserve(spec.tables.size());
  for (std::size_t t = 0; t < spec.tables.size(); ++t) {
    const TableConfig& config = spec.tables[t];
    if (config.rows <= 0 || config.rows > kMaxRows)
      throw ConfigError("model.tables[" + std::to_string(t) + "].rows (table \"" + config.name +
                        "\"): expected 1 to " + std::to_string(kMaxRows) + " rows (ids are 32-bit), got " +
                        std::to_string(config.rows));
    Table table;
    table.config = config;
    table.origin = origins[t];
    HETREC_CHECK(table.origin.col_offset % 2 == 0 && table.origin.full_rows >= table.origin.row_offset + config.rows,
                 "table origin");
    table.weight = Tensor::empty({config.rows, dim_}, row_dtype_);
    const uint64_t table_key = seed_streams::embedding_init_table_key(seed_, static_cast<uint64_t>(table.origin.table));
    switch (row_dtype_) {
      case DType::f32: init_rows<F32Rows>(table.weight, config.rows, dim_, table_key, table.origin); break;
      case DType::f16: init_rows<F16Rows>(table.weight, config.rows, dim_, table_key, table.origin); break;
      default: init_rows<BF16Rows>(table.weight, config.rows, dim_, table_key, table.origin); break;
    }
    const int64_t state_per_row = sparse_state_per_row(optim_.sparse, dim_);
    if (state_per_row > 0) {
      table.accumulator = state_per_row == 1 ? Tensor::empty({config.rows}, DType::f32)
                                             : Tensor::empty({config.rows, dim_}, DType::f32);
      float* acc = table.accumulator.data<float>();
      const float initial = static_cast<float>(optim_.adagrad_initial_accumulator);
      const int64_t count = table.accumulator.numel();
#pragma omp parallel for schedule(static)
      for (int64_t i = 0; i < count; ++i) acc[i] = initial;
    }
    tables_.push_back(std::move(table));
  }
}

int EmbeddingCollection::num_tables() const { return static_cast<int>(tables_.size()); }
int EmbeddingCollection::dim() const { return dim_; }

const TableConfig& EmbeddingCollection::table(int t) const {
  HETREC_CHECK(t >= 0 && t < num_tables(), "table index " + std::to_string(t));
  return tables_[static_cast<std::size_t>(t)].config;
}
int64_t EmbeddingCollection::rows(int t) const { return table(t).rows; }

void EmbeddingCollection::validate(const Batch& batch) const {
  const int num = num_tables();
  if (batch.num_tables != num)
    throw DataError("batch (first sample " + std::to_string(batch.first_sample) + ") has " +
                    std::to_string(batch.num_tables) + " sparse features, expected " + std::to_string(num) +
                    " (one per embedding table)");
  const int64_t b_size = batch.size;
  const auto expected_offsets = static_cast<std::size_t>(num * b_size + 1);
  if (b_size < 0 || batch.offsets.size() != expected_offsets)
    throw DataError("batch (first sample " + std::to_string(batch.first_sample) + "): offsets has " +
                    std::to_string(batch.offsets.size()) + " entries, expected tables x samples + 1 = " +
                    std::to_string(expected_offsets));
  if (batch.offsets.front() != 0 || static_cast<std::size_t>(batch.offsets.back()) != batch.ids.size())
    throw DataError("batch (first sample " + std::to_string(batch.first_sample) +
                    "): offsets must start at 0 and end at the id count " + std::to_string(batch.ids.size()) +
                    ", got " + std::to_string(batch.offsets.front()) + " .. " +
                    std::to_string(batch.offsets.back()));
  for (std::size_t i = 1; i < batch.offsets.size(); ++i)
    if (batch.offsets[i] < batch.offsets[i - 1])
      throw DataError("batch (first sample " + std::to_string(batch.first_sample) + "): offsets[" +
                      std::to_string(i) + "] = " + std::to_string(batch.offsets[i]) + " is below offsets[" +
                      std::to_string(i - 1) + "] = " + std::to_string(batch.offsets[i - 1]) +
                      ", expected non-decreasing offsets");
  for (int t = 0; t < num; ++t) {
    const int64_t rows_t = tables_[static_cast<std::size_t>(t)].config.rows;
    const int64_t lo = batch.bag_begin(t, 0);
    const int64_t hi = batch.bag_begin(t, b_size);
    for (int64_t i = lo; i < hi; ++i) {
      const int32_t id = batch.ids[static_cast<std::size_t>(i)];
      if (id >= 0 && id < rows_t) continue;
      // Find the sample whose bag holds position i (the last bag starting at or before it).
      const auto first = batch.offsets.begin() + t * b_size;
      const auto it = std::upper_bound(first, first + b_size + 1, static_cast<int32_t>(i));
      const int64_t sample = (it - first) - 1;
      const Table& table = tables_[static_cast<std::size_t>(t)];
      throw DataError("embedding table \"" + table.config.name + "\" (table " + std::to_string(t) + "): sample " +
                      std::to_string(sample) + " of the batch (sample " +
                      std::to_string(batch.first_sample + sample) + " of its source) has id " +
                      std::to_string(id) + ", expected an id in [0, " + std::to_string(table.config.rows) + ")");
    }
  }
}

void EmbeddingCollection::forward(const Batch& batch, float* pooled) const {
  validate(batch);
  switch (row_dtype_) {
    case DType::f32: forward_rows<F32Rows>(batch, pooled); break;
    case DType::f16: forward_rows<F16Rows>(batch, pooled); break;
    default: forward_rows<BF16Rows>(batch, pooled); break;
  }
}

template <class Rows>
void EmbeddingCollection::forward_rows(const Batch& batch, float* pooled) const {
  using Storage = typename Rows::Storage;
  const int num = num_tables();
  const int dim = dim_;
  const int64_t b_size = batch.size;
  const int32_t* ids = batch.ids.data();
  const int64_t row_bytes = static_cast<int64_t>(dim) * static_cast<int64_t>(sizeof(Storage));
#pragma omp parallel
  {
    // Each thread pools a contiguous range of samples, table by table, so the ids it
    // reads are contiguous and the rows a few ids ahead can be prefetched.
    const int64_t threads = omp_get_num_threads();
    const int64_t tid = omp_get_thread_num();
    const int64_t b_begin = b_size * tid / threads;
    const int64_t b_end = b_size * (tid + 1) / threads;
    for (int t = 0; t < num; ++t) {
      const Table& table = tables_[static_cast<std::size_t>(t)];
      const Storage* weight = table.weight.data<Storage>();
      const bool mean = table.config.pooling == Pooling::mean;
      const int64_t ids_end = batch.bag_begin(t, b_end);
      for (int64_t b = b_begin; b < b_end; ++b) {
        float* out = pooled + (b * num + t) * dim;
        std::fill(out, out + dim, 0.0f);
        const int64_t begin = batch.bag_begin(t, b);
        const int64_t end = batch.bag_begin(t, b + 1);
        for (int64_t i = begin; i < end; ++i) {
          if (i + kPrefetchAhead < ids_end)
            prefetch_row(weight + static_cast<int64_t>(ids[i + kPrefetchAhead]) * dim, row_bytes);
          const Storage* row = weight + static_cast<int64_t>(ids[i]) * dim;
          for (int d = 0; d < dim; ++d) out[d] += Rows::load(row, d);
        }
        if (mean && end > begin) {
          const float inv_len = 1.0f / static_cast<float>(end - begin);
          for (int d = 0; d < dim; ++d) out[d] *= inv_len;
        }
      }
    }
  }
}

void EmbeddingCollection::group_by_row(const Batch& batch, int t, uint32_t* histogram) {
  const int64_t b_size = batch.size;
  const int64_t lo = batch.bag_begin(t, 0);
  const int64_t hi = batch.bag_begin(t, b_size);
  // The sample, not the position, is the tie-break: every occurrence of an id in one bag
  // contributes the same gradient, so their order cannot change the sum.
  uint64_t* keys = sort_keys_.data() + lo;
  for (int64_t b = 0; b < b_size; ++b)
    for (int64_t i = batch.bag_begin(t, b), end = batch.bag_begin(t, b + 1); i < end; ++i)
      keys[i - lo] = (static_cast<uint64_t>(static_cast<uint32_t>(batch.ids[static_cast<std::size_t>(i)])) << 32) |
                     static_cast<uint64_t>(b);
  sort_by_row_id(keys, sort_scratch_.data() + lo, hi - lo, tables_[static_cast<std::size_t>(t)].config.rows,
                 histogram);
  // Runs of equal ids; table t writes its run starts (plus the end) from lo + t on.
  int64_t* runs = run_begin_.data() + lo + t;
  int64_t count = 0;
  for (int64_t i = lo; i < hi; ++i)
    if (i == lo || (sort_keys_[static_cast<std::size_t>(i)] >> 32) != (sort_keys_[static_cast<std::size_t>(i - 1)] >> 32))
      runs[count++] = i;
  runs[count] = hi;
  num_runs_[static_cast<std::size_t>(t)] = count;
}

void EmbeddingCollection::backward_update(const Batch& batch, const float* grad_pooled, float lr, int64_t step) {
  validate(batch);
  switch (row_dtype_) {
    case DType::f32: update_rows<F32Rows>(batch, grad_pooled, lr, step); break;
    case DType::f16: update_rows<F16Rows>(batch, grad_pooled, lr, step); break;
    default: update_rows<BF16Rows>(batch, grad_pooled, lr, step); break;
  }
}

template <class Rows>
void EmbeddingCollection::update_rows(const Batch& batch, const float* grad_pooled, float lr, int64_t step) {
  using Storage = typename Rows::Storage;
  const int num = num_tables();
  const int dim = dim_;
  const int64_t b_size = batch.size;
  const std::size_t n = batch.ids.size();
  const int max_threads = omp_get_max_threads();
  sort_keys_.resize(n);
  sort_scratch_.resize(n);
  run_begin_.resize(n + static_cast<std::size_t>(num));
  num_runs_.resize(static_cast<std::size_t>(num));
  histograms_.resize(static_cast<std::size_t>(max_threads * kRadixBuckets));
  row_scratch_.resize(static_cast<std::size_t>(max_threads) * 2 * static_cast<std::size_t>(dim));

  const OptimizerKind kind = optim_.sparse;
  const int64_t row_bytes = static_cast<int64_t>(dim) * static_cast<int64_t>(sizeof(Storage));
  const int64_t acc_width = sparse_state_per_row(kind, dim);
  const int64_t acc_bytes = acc_width * static_cast<int64_t>(sizeof(float));
  const float eps = static_cast<float>(optim_.eps);

  // Grouping runs one table per thread; taking the tables with the most ids first
  // balances the threads (longest processing time first).
  table_order_.resize(static_cast<std::size_t>(num));
  for (int t = 0; t < num; ++t) table_order_[static_cast<std::size_t>(t)] = t;
  std::stable_sort(table_order_.begin(), table_order_.end(), [&](int x, int y) {
    return batch.bag_begin(x, b_size) - batch.bag_begin(x, 0) > batch.bag_begin(y, b_size) - batch.bag_begin(y, 0);
  });

#pragma omp parallel
  {
    const int tid = omp_get_thread_num();
#pragma omp for schedule(dynamic, 1)
    for (int k = 0; k < num; ++k)
      group_by_row(batch, table_order_[static_cast<std::size_t>(k)],
                   histograms_.data() + static_cast<std::size_t>(tid) * kRadixBuckets);

    float* grad = row_scratch_.data() + static_cast<std::size_t>(tid) * 2 * static_cast<std::size_t>(dim);
    float* widened = grad + dim;  // fp32 copy of a 16-bit row
    for (int t = 0; t < num; ++t) {
      Table& table = tables_[static_cast<std::size_t>(t)];
      Storage* weight = table.weight.data<Storage>();
      float* accumulator = table.accumulator.defined() ? table.accumulator.data<float>() : nullptr;
      const bool mean = table.config.pooling == Pooling::mean;
      const int64_t* runs = run_begin_.data() + batch.bag_begin(t, 0) + t;
      const int64_t count = num_runs_[static_cast<std::size_t>(t)];
      const uint64_t table_key = rounding_table_key(seed_, step, table.origin.table);
      // A shard's row r is row r + row_offset of the full table, and its element e is
      // element e + col_offset (col_offset even: the draws stay paired).
      const int64_t row_offset = table.origin.row_offset;
      const auto draw_offset = static_cast<uint64_t>(table.origin.col_offset / 2);
#pragma omp for schedule(dynamic, kRowsPerChunk) nowait
      for (int64_t r = 0; r < count; ++r) {
        const int64_t first = runs[r];
        const int64_t last = runs[r + 1];
        const int64_t id = static_cast<int64_t>(sort_keys_[static_cast<std::size_t>(first)] >> 32);
        // Sum the contributions in ascending sample: the order is fixed by the batch,
        // not by the threads.
        std::fill(grad, grad + dim, 0.0f);
        if (r + kPrefetchAhead < count) {
          const auto ahead = static_cast<int64_t>(sort_keys_[static_cast<std::size_t>(runs[r + kPrefetchAhead])] >> 32);
          prefetch_row(weight + ahead * dim, row_bytes);
          if (accumulator) prefetch_row(accumulator + ahead * acc_width, acc_bytes);
        }
        for (int64_t k = first; k < last; ++k) {
          const auto b = static_cast<int64_t>(static_cast<uint32_t>(sort_keys_[static_cast<std::size_t>(k)]));
          const float* g = grad_pooled + (b * num + t) * dim;
          if (mean) {
            const float inv_len = 1.0f / static_cast<float>(batch.bag_begin(t, b + 1) - batch.bag_begin(t, b));
            for (int d = 0; d < dim; ++d) grad[d] += g[d] * inv_len;
          } else {
            for (int d = 0; d < dim; ++d) grad[d] += g[d];
          }
        }
        Storage* row = weight + id * dim;
        float* w = nullptr;  // the row in fp32: in place, or a widened copy of a 16-bit row
        if constexpr (Rows::kWidened) {
          for (int d = 0; d < dim; ++d) widened[d] = Rows::load(row, d);
          w = widened;
        } else {
          w = row;
        }
        switch (kind) {
          case OptimizerKind::sgd: sgd_row_update(w, grad, dim, lr); break;
          case OptimizerKind::adagrad: adagrad_row_update(w, accumulator + id * dim, grad, dim, lr, eps); break;
          default: rowwise_adagrad_row_update(w, accumulator + id, grad, dim, lr, eps); break;
        }
        if constexpr (Rows::kWidened) {
          store_row_stochastic<Rows>(row, widened, dim, rounding_row_key(table_key, id + row_offset) + draw_offset);
        }
      }
    }
  }
}

std::vector<NamedTensor> EmbeddingCollection::state() {
  std::vector<NamedTensor> out;
  for (const Table& table : tables_) {
    out.push_back({"embedding." + table.config.name + ".weight", table.weight});
    if (table.accumulator.defined()) out.push_back({"embedding." + table.config.name + ".accumulator", table.accumulator});
  }
  return out;
}

}  // namespace hetrec::nn::nn
