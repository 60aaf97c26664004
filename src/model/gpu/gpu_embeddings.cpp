#include "model/gpu/gpu_embeddings.h"

#include <algorithm>
#include <string>
#include <utility>

#include "core/error.h"
#include "data/batch_checks.h"
#include "gpu/memory.h"
#include "gpu/stream.h"
#include "kernels/embedding_init.h"
#include "optim/sparse_update.h"

namespace hetrec::inline model::gpu_model {

kernels::SparseOptimizerKind sparse_optimizer_kind(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::sgd: return kernels::SparseOptimizerKind::sgd;
    case OptimizerKind::adagrad: return kernels::SparseOptimizerKind::adagrad;
    default: return kernels::SparseOptimizerKind::rowwise_adagrad;
  }
}


namespace {
// Ids are int32 (data/batch.h), so a table can address at most 2^31 rows.
constexpr int64_t kMaxRowsPerTable = int64_t{1} << 31;

// One origin per table, each a block inside its full table; column offsets even (the
// rounding draws cover two elements each).
void check_origins(const ModelConfig& model, const std::vector<TableOrigin>& origins) {
  if (origins.size() != model.tables.size())
    throw ConfigError("embedding shards: " + std::to_string(origins.size()) + " origins for " +
                      std::to_string(model.tables.size()) + " tables, expected one per table");
  for (std::size_t t = 0; t < origins.size(); ++t) {
    const TableOrigin& o = origins[t];
    const TableConfig& c = model.tables[t];
    if (o.table < 0 || o.row_offset < 0 || o.col_offset < 0 || o.col_offset % 2 != 0 ||
        o.row_offset + c.rows > o.full_rows)
      throw ConfigError("embedding shard " + std::to_string(t) + " (table \"" + c.name + "\", " +
                        std::to_string(c.rows) + " rows): origin table " + std::to_string(o.table) + ", rows from " +
                        std::to_string(o.row_offset) + " of " + std::to_string(o.full_rows) + ", columns from " +
                        std::to_string(o.col_offset) +
                        "; expected a block inside the full table starting at an even column");
  }
}
}  // namespace

GpuEmbeddings::GpuEmbeddings(const ModelConfig& model, const OptimConfig& optim, Allocator& device,
                             gpu::stream_t stream, std::vector<TableOrigin> origins)
    : model_(model), optim_(optim), origins_(std::move(origins)) {
  const DType dtype = model.row_dtype;
  if (dtype != DType::f32 && dtype != DType::f16 && dtype != DType::bf16)
    throw ConfigError("model.row_dtype: expected \"fp32\", \"fp16\" or \"bf16\" for the embedding rows, got \"" +
                      std::string(dtype_name(dtype)) + "\"");
  check_sparse_optimizer(optim.sparse);
  const int dim = model.embedding_dim;
  const int num = model.num_tables();
  row_offsets_host_.assign(1, 0);
  for (int t = 0; t < num; ++t) {
    const TableConfig& c = model.tables[static_cast<std::size_t>(t)];
    if (c.rows <= 0 || c.rows > kMaxRowsPerTable)
      throw ConfigError("model.tables[" + std::to_string(t) + "].rows (table \"" + c.name + "\"): expected 1 to " +
                        std::to_string(kMaxRowsPerTable) + " rows (ids are 32-bit), got " + std::to_string(c.rows));
    row_offsets_host_.push_back(row_offsets_host_.back() + c.rows);
  }
  const bool sharded = !origins_.empty();
  if (!sharded)
    for (int t = 0; t < num; ++t) origins_.push_back({t, 0, model.tables[static_cast<std::size_t>(t)].rows, 0});
  check_origins(model, origins_);
  const int64_t total_rows = row_offsets_host_.back();

  // Placement: tables named in model.host_tables go to mapped host memory; each buffer
  // holds its tables back to back in table order.
  on_host_.assign(static_cast<std::size_t>(num), 0);
  for (const std::string& name : model.host_tables) {
    bool found = false;
    for (int t = 0; t < num; ++t)
      if (model.tables[static_cast<std::size_t>(t)].name == name) {
        on_host_[static_cast<std::size_t>(t)] = 1;
        found = true;
      }
    if (!found) throw ConfigError("model.host_tables: '" + name + "' is not a table of the model");
  }
  int64_t hbm_rows = 0, host_rows = 0;
  local_offset_.assign(static_cast<std::size_t>(num), 0);
  for (int t = 0; t < num; ++t) {
    int64_t& next = on_host(t) ? host_rows : hbm_rows;
    local_offset_[static_cast<std::size_t>(t)] = next;
    next += rows(t);
  }

  const std::size_t esize = dtype_size(dtype);
  if (hbm_rows > 0) weights_ = Tensor::empty({hbm_rows, dim}, dtype, device);
  if (host_rows > 0) host_weights_ = gpu::MappedHostBuffer(static_cast<std::size_t>(host_rows) * dim * esize);
  for (int t = 0; t < num; ++t) {
    const TableOrigin& o = origins_[static_cast<std::size_t>(t)];
    kernels::embedding_init_uniform(table_rows(t), rows(t), dim, dtype,
                                    kernels::embedding_table_init_key(model.init_seed, o.table), stream,
                                    {o.row_offset, o.full_rows, o.col_offset});
  }
  const int64_t state = sparse_state_per_row(optim.sparse, dim);
  if (state > 0) {
    const auto initial = static_cast<float>(optim.adagrad_initial_accumulator);
    if (hbm_rows > 0) {
      accumulators_ = Tensor::empty({hbm_rows * state}, DType::f32, device);
      kernels::fill_f32(accumulators_.data<float>(), accumulators_.numel(), initial, stream);
    }
    if (host_rows > 0) {
      host_accumulators_ = gpu::MappedHostBuffer(static_cast<std::size_t>(host_rows * state) * sizeof(float));
      kernels::fill_f32(static_cast<float*>(host_accumulators_.device_alias()), host_rows * state, initial, stream);
    }
  }

  std::vector<void*> row_pointers;
  std::vector<float*> state_pointers;
  if (host_rows > 0) {
    for (int t = 0; t < num; ++t) {
      row_pointers.push_back(table_rows(t));
      state_pointers.push_back(table_state(t));
    }
    table_pointers_ = Tensor::empty({static_cast<int64_t>(num * sizeof(void*))}, DType::u8, device);
    gpu::memcpy_async(table_pointers_.raw(), row_pointers.data(), table_pointers_.nbytes(),
                      gpu::CopyKind::host_to_device, stream);
    if (state > 0) {
      state_pointers_ = Tensor::empty({static_cast<int64_t>(num * sizeof(float*))}, DType::u8, device);
      gpu::memcpy_async(state_pointers_.raw(), state_pointers.data(), state_pointers_.nbytes(),
                        gpu::CopyKind::host_to_device, stream);
    }
  }

  row_offsets_ = Tensor::empty({num + 1}, DType::i64, device);
  gpu::memcpy_async(row_offsets_.raw(), row_offsets_host_.data(), row_offsets_.nbytes(), gpu::CopyKind::host_to_device,
                    stream);
  std::vector<uint8_t> mean(static_cast<std::size_t>(num));
  for (int t = 0; t < num; ++t) mean[static_cast<std::size_t>(t)] = model.tables[static_cast<std::size_t>(t)].pooling == Pooling::mean;
  mean_pooling_ = Tensor::empty({std::max(num, 1)}, DType::u8, device);
  gpu::memcpy_async(mean_pooling_.raw(), mean.data(), mean.size(), gpu::CopyKind::host_to_device, stream);
  std::vector<kernels::ShardOrigin> shard_origins;
  if (sharded) {
    for (const TableOrigin& o : origins_) shard_origins.push_back({o.table, o.col_offset, o.row_offset});
    shard_origins_ = Tensor::empty({static_cast<int64_t>(shard_origins.size() * sizeof(kernels::ShardOrigin))},
                                   DType::u8, device);
    gpu::memcpy_async(shard_origins_.raw(), shard_origins.data(), shard_origins_.nbytes(),
                      gpu::CopyKind::host_to_device, stream);
  }
  // The host vectors above die with this scope: wait for the copies.
  gpu::synchronize(stream);

  // With every table in one buffer the kernels address rows from its base; otherwise
  // through the per-table pointers (the base is then only an alignment witness).
  tables_.weights = hbm_rows > 0 ? weights_.raw() : host_weights_.device_alias();
  tables_.table_weights = table_pointers_.defined() ? static_cast<void* const*>(table_pointers_.raw()) : nullptr;
  tables_.row_offsets = row_offsets_.data<int64_t>();
  tables_.mean_pooling = mean_pooling_.data<uint8_t>();
  tables_.num_tables = num;
  tables_.dim = dim;
  tables_.total_rows = total_rows;
  tables_.row_dtype = dtype;

  optimizer_.kind = sparse_optimizer_kind(optim.sparse);
  optimizer_.eps = static_cast<float>(optim.eps);
  optimizer_.accumulators = state == 0 ? nullptr
                            : hbm_rows > 0 ? accumulators_.data<float>()
                                           : static_cast<float*>(host_accumulators_.device_alias());
  optimizer_.table_accumulators =
      state_pointers_.defined() ? static_cast<float* const*>(state_pointers_.raw()) : nullptr;
  optimizer_.seed = model.init_seed;
  optimizer_.sort = model.sort == SortSelection::engine    ? kernels::SortImpl::engine
                    : model.sort == SortSelection::library ? kernels::SortImpl::library
                                                           : kernels::SortImpl::automatic;
  optimizer_.shard_origins =
      shard_origins_.defined() ? static_cast<const kernels::ShardOrigin*>(shard_origins_.raw()) : nullptr;
}

const kernels::SparseOptimizerParams& GpuEmbeddings::optimizer(const kernels::StepScalars* scalars) {
  optimizer_.scalars = scalars;
  return optimizer_;
}

void GpuEmbeddings::validate(const Batch& batch) const { check_bag_ids(batch, model_.tables); }

int GpuEmbeddings::host_table_count() const {
  int n = 0;
  for (uint8_t h : on_host_) n += h;
  return n;
}

void* GpuEmbeddings::table_rows(int t) const {
  const std::size_t offset = static_cast<std::size_t>(local_offset_[static_cast<std::size_t>(t)]) *
                             static_cast<std::size_t>(model_.embedding_dim) * dtype_size(model_.row_dtype);
  char* base = on_host(t) ? static_cast<char*>(host_weights_.device_alias()) : static_cast<char*>(weights_.raw());
  return base + offset;
}

float* GpuEmbeddings::table_state(int t) const {
  const int64_t state = sparse_state_per_row(optim_.sparse, model_.embedding_dim);
  if (state == 0) return nullptr;
  float* base = on_host(t) ? static_cast<float*>(host_accumulators_.device_alias()) : accumulators_.data<float>();
  return base + local_offset_[static_cast<std::size_t>(t)] * state;
}

const std::vector<DeviceMirror>& GpuEmbeddings::mirrors() {
  if (!mirrors_.empty()) return mirrors_;
  const int dim = model_.embedding_dim;
  const int64_t state = sparse_state_per_row(optim_.sparse, dim);
  for (int t = 0; t < model_.num_tables(); ++t) {
    const TableConfig& c = model_.tables[static_cast<std::size_t>(t)];
    mirrors_.push_back({"embedding." + c.name + ".weight", Tensor::empty({c.rows, dim}, model_.row_dtype), table_rows(t)});
    if (state > 0) {
      Tensor host = state == 1 ? Tensor::empty({c.rows}, DType::f32) : Tensor::empty({c.rows, dim}, DType::f32);
      mirrors_.push_back({"embedding." + c.name + ".accumulator", host, table_state(t)});
    }
  }
  return mirrors_;
}

}  // namespace hetrec::model::gpu_model
