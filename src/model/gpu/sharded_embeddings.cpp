#include "model/gpu/sharded_embeddings.h"

#include <algorithm>
#include <string>

#include "core/error.h"
#include "data/batch_checks.h"
#include "data/batch_slice.h"
#include "gpu/memory.h"
#include "kernels/embedding_bag_backward.h"
#include "tunable/embedding_forward/embedding_bag_forward.h"
#include "optim/sparse_update.h"

namespace hetrec::inline model::gpu_model {
namespace {

int index_of(const std::vector<int>& list, int table) {
  const auto it = std::find(list.begin(), list.end(), table);
  HETREC_CHECK(it != list.end(), "shard of table " + std::to_string(table) + " in its rank's layout");
  return static_cast<int>(it - list.begin());
}

Tensor elements(int64_t n, DType dtype, Allocator& device) {
  return Tensor::empty({std::max<int64_t>(n, 1)}, dtype, device);
}
Tensor floats(int64_t n, Allocator& device) { return elements(n, DType::f32, device); }

}  // namespace

ShardedGpuEmbeddings::ShardedGpuEmbeddings(const ModelConfig& model, const OptimConfig& optim,
                                           const dist::ShardingPlan& plan, int rank, gpu::Communicator& comm,
                                           Allocator& device, gpu::stream_t stream)
    : model_(model),
      optim_(optim),
      plan_(plan),
      rank_(rank),
      ranks_(plan.world_size),
      exchange_(plan.exchange_dtype),
      comm_(comm),
      device_(device) {
  HETREC_CHECK(exchange_ == DType::f32 || exchange_ == DType::bf16, "an fp32 or bf16 embedding exchange");
  const int num = model.num_tables();
  HETREC_CHECK(static_cast<int>(plan.tables.size()) == num, "one sharding per table");
  HETREC_CHECK(comm.ranks() == ranks_ && comm.rank() == rank_, "the communicator's ranks match the plan");
  layout_.assign(static_cast<std::size_t>(ranks_), RankLayout{});
  for (int t = 0; t < num; ++t) {
    const TableConfig& c = model.tables[static_cast<std::size_t>(t)];
    const dist::TableShard& ts = plan.tables[static_cast<std::size_t>(t)];
    const std::string table = "table \"" + c.name + "\"";
    if (ts.type == dist::ShardingType::row_wise && c.pooling == Pooling::mean)
      throw ConfigError("model.tables[" + std::to_string(t) + "].pooling = \"mean\" (" + table +
                        ") with row_wise sharding: the GPU backend adds row blocks' partial sums, which mean "
                        "pooling cannot divide; shard this table table_wise, column_wise or replicated");
    if (ts.type == dist::ShardingType::column_wise && optim.sparse == OptimizerKind::rowwise_adagrad)
      throw ConfigError("optim.sparse = \"rowwise_adagrad\" with column_wise sharding of " + table +
                        ": the GPU backend's column shards support sgd and adagrad; shard it table_wise or row_wise");
    for (int h = 0; h < ranks_; ++h) {
      RankLayout& l = layout_[static_cast<std::size_t>(h)];
      switch (ts.type) {
        case dist::ShardingType::table_wise:
          if (ts.owner == h) l.whole.push_back(t);
          break;
        case dist::ShardingType::row_wise:
          if (ts.holds(h)) l.whole.push_back(t);
          break;
        case dist::ShardingType::column_wise:
          if (!ts.holds(h)) break;
          // Even column bounds from one dim: every column table of a rank has its width.
          HETREC_CHECK(l.column.empty() || l.column_width == ts.cols_of(h), "one column width per rank");
          l.column.push_back(t);
          l.column_width = ts.cols_of(h);
          break;
        case dist::ShardingType::replicated:
          if (h == 0) replicated_.push_back(t);
          break;
      }
    }
  }

  const RankLayout& mine = layout_[static_cast<std::size_t>(rank_)];
  for (int t : mine.whole) {
    const TableConfig& c = model.tables[static_cast<std::size_t>(t)];
    const dist::TableShard& ts = plan.tables[static_cast<std::size_t>(t)];
    const bool block = ts.type == dist::ShardingType::row_wise;
    const int64_t begin = block ? ts.row_begin[static_cast<std::size_t>(rank_)] : 0;
    const int64_t end = block ? ts.row_end[static_cast<std::size_t>(rank_)] : c.rows;
    whole_.lookups.push_back({t, block, begin, end, c.rows, c.name});
    whole_.origins.push_back({t, begin, c.rows, 0});
  }
  whole_.width = model.embedding_dim;
  for (int t : mine.column) {
    const TableConfig& c = model.tables[static_cast<std::size_t>(t)];
    const dist::TableShard& ts = plan.tables[static_cast<std::size_t>(t)];
    column_.lookups.push_back({t, false, 0, c.rows, c.rows, c.name});
    column_.origins.push_back({t, 0, c.rows, ts.col_begin[static_cast<std::size_t>(rank_)]});
  }
  column_.width = mine.column_width;
  for (int t : replicated_) {
    const TableConfig& c = model.tables[static_cast<std::size_t>(t)];
    replica_.lookups.push_back({t, false, 0, c.rows, c.rows, c.name});
    replica_.origins.push_back({t, 0, c.rows, 0});
  }
  replica_.width = model.embedding_dim;
  for (Group* g : {&whole_, &column_, &replica_}) make_group(*g, model, optim, device, stream);
  if (!replicated_.empty())
    replica_local_staging_ = std::make_unique<BatchStaging>(0, static_cast<int>(replicated_.size()), device);
}

void ShardedGpuEmbeddings::make_group(Group& g, const ModelConfig& model, const OptimConfig& optim,
                                      Allocator& device, gpu::stream_t stream) {
  if (g.lookups.empty()) return;
  ModelConfig shard = model;
  shard.tables.clear();
  shard.host_tables.clear();
  for (std::size_t k = 0; k < g.lookups.size(); ++k) {
    const dist::ShardLookup& l = g.lookups[k];
    TableConfig c = model.tables[static_cast<std::size_t>(l.table)];
    c.rows = l.row_end - l.row_begin;
    shard.tables.push_back(c);
    if (std::find(model.host_tables.begin(), model.host_tables.end(), c.name) != model.host_tables.end())
      shard.host_tables.push_back(c.name);
  }
  shard.embedding_dim = g.width;
  g.tables = std::make_unique<GpuEmbeddings>(shard, optim, device, stream, g.origins);
  g.staging = std::make_unique<BatchStaging>(0, static_cast<int>(g.lookups.size()), device);
}

void ShardedGpuEmbeddings::pack(const Batch& global, int64_t local_begin, int64_t local_count, bool training) {
  global_ = global.size;
  local_ = local_count;
  packed_training_ = training;
  share_.resize(static_cast<std::size_t>(ranks_));
  for (int h = 0; h < ranks_; ++h)
    share_[static_cast<std::size_t>(h)] = share_begin(global.size, h + 1, ranks_) - share_begin(global.size, h, ranks_);
  for (Group* g : {&whole_, &column_, &replica_}) {
    if (!g->tables) continue;
    // Replicated shards are looked up for the local samples; their global bags serve the
    // update only.
    if (g == &replica_ && !training) continue;
    g->staging->pack_shard_bags(global, g->lookups, 0, global.size);
  }
  if (replica_local_staging_) replica_local_staging_->pack_shard_bags(global, replica_.lookups, local_begin, local_count);
}

bool ShardedGpuEmbeddings::copy_packed(gpu::Stream& copy, gpu::Event& ready, gpu::stream_t compute) {
  bool moved = false;
  for (Group* g : {&whole_, &column_, &replica_}) {
    if (!g->tables || (g == &replica_ && !packed_training_)) continue;
    moved |= g->staging->copy_packed(copy, ready);
    const int64_t max_ids = g->staging->device().bags.max_ids;
    if (packed_training_ && max_ids > g->id_capacity) {
      g->workspace = Tensor::empty(
          {static_cast<int64_t>(kernels::embedding_backward_workspace_bytes(max_ids, g->width))}, DType::u8, device_);
      g->id_capacity = max_ids;
      moved = true;
    }
  }
  if (replica_local_staging_) moved |= replica_local_staging_->copy_packed(copy, ready);
  moved |= reserve(global_, local_);
  if (moved || pieces_for_global_ != global_) {
    build_pieces(global_, compute);
    moved = true;
  }
  return moved;
}

void ShardedGpuEmbeddings::copy_ahead(gpu::Stream& copy) {
  for (Group* g : {&whole_, &column_, &replica_})
    if (g->tables && (g != &replica_ || packed_training_)) g->staging->copy_ahead(copy);
  if (replica_local_staging_) replica_local_staging_->copy_ahead(copy);
}

bool ShardedGpuEmbeddings::reserve(int64_t global, int64_t local) {
  if (global <= global_capacity_ && local <= local_capacity_) return false;
  global_capacity_ = std::max(global, global_capacity_);
  local_capacity_ = std::max(local, local_capacity_);
  int64_t whole_all = 0, column_all = 0;  // widths of every rank's shards side by side
  for (const RankLayout& l : layout_) {
    whole_all += static_cast<int64_t>(l.whole.size()) * model_.embedding_dim;
    column_all += static_cast<int64_t>(l.column.size()) * l.column_width;
  }
  const int64_t whole_mine = static_cast<int64_t>(whole_.lookups.size()) * whole_.width;
  const int64_t column_mine = static_cast<int64_t>(column_.lookups.size()) * column_.width;
  const int64_t replica_width = static_cast<int64_t>(replicated_.size()) * model_.embedding_dim;
  whole_pooled_ = elements(global_capacity_ * whole_mine, exchange_, device_);
  whole_grad_ = elements(global_capacity_ * whole_mine, exchange_, device_);
  whole_received_ = elements(local_capacity_ * whole_all, exchange_, device_);
  whole_grad_send_ = elements(local_capacity_ * whole_all, exchange_, device_);
  column_pooled_ = elements(global_capacity_ * column_mine, exchange_, device_);
  column_grad_ = elements(global_capacity_ * column_mine, exchange_, device_);
  column_received_ = elements(local_capacity_ * column_all, exchange_, device_);
  column_grad_send_ = elements(local_capacity_ * column_all, exchange_, device_);
  replica_pooled_ = floats(local_capacity_ * replica_width, device_);
  replica_grad_send_ = floats(local_capacity_ * replica_width, device_);
  replica_grad_ = floats(global_capacity_ * replica_width, device_);
  return true;
}

void ShardedGpuEmbeddings::build_pieces(int64_t global, gpu::stream_t compute) {
  const int dim = model_.embedding_dim;
  const auto n = static_cast<std::size_t>(ranks_);
  // Where rank h's block starts in the rank-major receive buffers of this rank.
  std::vector<int64_t> whole_at(n + 1, 0), column_at(n + 1, 0);
  whole_send_bytes_.assign(n, 0);
  whole_recv_bytes_.assign(n, 0);
  column_send_bytes_.assign(n, 0);
  column_recv_bytes_.assign(n, 0);
  replica_recv_bytes_.assign(n, 0);
  const int64_t whole_mine = static_cast<int64_t>(whole_.lookups.size()) * whole_.width;
  const int64_t column_mine = static_cast<int64_t>(column_.lookups.size()) * column_.width;
  const int64_t replica_width = static_cast<int64_t>(replicated_.size()) * dim;
  const auto es = static_cast<int64_t>(dtype_size(exchange_));
  const int64_t kFloat = sizeof(float);
  for (std::size_t h = 0; h < n; ++h) {
    const RankLayout& l = layout_[h];
    const int64_t whole_h = static_cast<int64_t>(l.whole.size()) * dim;
    const int64_t column_h = static_cast<int64_t>(l.column.size()) * l.column_width;
    whole_at[h + 1] = whole_at[h] + local_ * whole_h;
    column_at[h + 1] = column_at[h] + local_ * column_h;
    whole_recv_bytes_[h] = local_ * whole_h * es;
    column_recv_bytes_[h] = local_ * column_h * es;
    whole_send_bytes_[h] = share_[h] * whole_mine * es;
    column_send_bytes_[h] = share_[h] * column_mine * es;
    replica_recv_bytes_[h] = share_[h] * replica_width * kFloat;
  }

  pieces_host_.clear();
  grad_pieces_host_.clear();
  slot_begin_host_.assign(1, 0);
  // Element `at` of an exchange buffer.
  const auto element = [es](Tensor& buffer, int64_t at) { return static_cast<char*>(buffer.raw()) + at * es; };
  const int bf16 = exchange_ == DType::bf16 ? 1 : 0;
  for (int t = 0; t < model_.num_tables(); ++t) {
    const dist::TableShard& ts = plan_.tables[static_cast<std::size_t>(t)];
    bool first = true;
    for (int h = 0; h < ranks_; ++h) {
      const RankLayout& l = layout_[static_cast<std::size_t>(h)];
      const bool whole = (ts.type == dist::ShardingType::table_wise && ts.owner == h) ||
                         (ts.type == dist::ShardingType::row_wise && ts.holds(h));
      if (whole) {
        const int64_t at = whole_at[static_cast<std::size_t>(h)] + int64_t{index_of(l.whole, t)} * dim;
        const int64_t stride = static_cast<int64_t>(l.whole.size()) * dim;
        pieces_host_.push_back({element(whole_received_, at), stride, t, 0, dim, first ? 0 : 1, bf16});
        grad_pieces_host_.push_back({element(whole_grad_send_, at), stride, t, 0, dim, bf16});
        first = false;
      } else if (ts.type == dist::ShardingType::column_wise && ts.holds(h)) {
        const int64_t at = column_at[static_cast<std::size_t>(h)] + int64_t{index_of(l.column, t)} * l.column_width;
        const int64_t stride = static_cast<int64_t>(l.column.size()) * l.column_width;
        const int col = ts.col_begin[static_cast<std::size_t>(h)];
        pieces_host_.push_back({element(column_received_, at), stride, t, col, l.column_width, 0, bf16});
        grad_pieces_host_.push_back({element(column_grad_send_, at), stride, t, col, l.column_width, bf16});
      }
    }
    if (ts.type == dist::ShardingType::replicated) {
      const int64_t at = int64_t{index_of(replicated_, t)} * dim;
      pieces_host_.push_back({replica_pooled_.data<float>() + at, replica_width, t, 0, dim, 0, 0});
      grad_pieces_host_.push_back({replica_grad_send_.data<float>() + at, replica_width, t, 0, dim, 0});
    }
    slot_begin_host_.push_back(static_cast<int>(pieces_host_.size()));
  }
  pieces_ = Tensor::empty({static_cast<int64_t>(pieces_host_.size() * sizeof(kernels::PooledPiece))}, DType::u8, device_);
  grad_pieces_ =
      Tensor::empty({static_cast<int64_t>(grad_pieces_host_.size() * sizeof(kernels::PooledGradPiece))}, DType::u8, device_);
  slot_begin_ = Tensor::empty({static_cast<int64_t>(slot_begin_host_.size())}, DType::i32, device_);
  gpu::memcpy_async(pieces_.raw(), pieces_host_.data(), pieces_.nbytes(), gpu::CopyKind::host_to_device, compute);
  gpu::memcpy_async(grad_pieces_.raw(), grad_pieces_host_.data(), grad_pieces_.nbytes(), gpu::CopyKind::host_to_device,
                    compute);
  gpu::memcpy_async(slot_begin_.raw(), slot_begin_host_.data(), slot_begin_.nbytes(), gpu::CopyKind::host_to_device,
                    compute);
  gpu::synchronize(compute);  // the host vectors may change before the next build
  pieces_for_global_ = global;
}

void ShardedGpuEmbeddings::lookup(int32_t* bad_ids, gpu::stream_t stream, const kernels::TunedEmbeddingForward* tuned) {
  // A tuned lookup serves the groups whose pooled output it was compiled for.
  const auto fits = [tuned](DType out) { return tuned && tuned->shape().out_dtype == out ? tuned : nullptr; };
  if (whole_.tables)
    kernels::embedding_bag_forward(whole_.tables->tables(), whole_.staging->device().bags,
                                   kernels::PooledView{whole_pooled_.raw(),
                                                       static_cast<int64_t>(whole_.lookups.size()) * whole_.width,
                                                       exchange_},
                                   bad_ids, stream, fits(exchange_));
  if (column_.tables)
    kernels::embedding_bag_forward(column_.tables->tables(), column_.staging->device().bags,
                                   kernels::PooledView{column_pooled_.raw(),
                                                       static_cast<int64_t>(column_.lookups.size()) * column_.width,
                                                       exchange_},
                                   bad_ids, stream, nullptr);
  if (replica_.tables)
    kernels::embedding_bag_forward(replica_.tables->tables(), replica_local_staging_->device().bags,
                                   kernels::PooledView{replica_pooled_.raw(),
                                                       static_cast<int64_t>(replicated_.size()) * model_.embedding_dim,
                                                       DType::f32},
                                   bad_ids, stream, fits(DType::f32));
}

void ShardedGpuEmbeddings::exchange_pooled(float* slots, int64_t stride, gpu::stream_t stream) {
  comm_.all_to_all_v(whole_pooled_.raw(), whole_send_bytes_, whole_received_.raw(), whole_recv_bytes_, stream);
  comm_.all_to_all_v(column_pooled_.raw(), column_send_bytes_, column_received_.raw(), column_recv_bytes_, stream);
  kernels::gather_pooled_pieces(static_cast<const kernels::PooledPiece*>(pieces_.raw()), slot_begin_.data<int>(),
                                model_.num_tables(), local_, slots, stride, model_.embedding_dim, stream);
}

void ShardedGpuEmbeddings::exchange_gradients(const float* grad_slots, int64_t stride, gpu::stream_t stream) {
  kernels::scatter_pooled_grads(static_cast<const kernels::PooledGradPiece*>(grad_pieces_.raw()),
                                static_cast<int>(grad_pieces_host_.size()), local_, grad_slots, stride,
                                model_.embedding_dim, stream);
  // The reverse of forward's exchanges: what this rank received, it sends back.
  comm_.all_to_all_v(whole_grad_send_.raw(), whole_recv_bytes_, whole_grad_.raw(), whole_send_bytes_, stream);
  comm_.all_to_all_v(column_grad_send_.raw(), column_recv_bytes_, column_grad_.raw(), column_send_bytes_, stream);
  if (!replicated_.empty()) {
    const int64_t bytes = local_ * static_cast<int64_t>(replicated_.size()) * model_.embedding_dim *
                          static_cast<int64_t>(sizeof(float));
    comm_.all_gather_v(replica_grad_send_.raw(), bytes, replica_grad_.raw(), replica_recv_bytes_, stream);
  }
}

void ShardedGpuEmbeddings::update(const kernels::StepScalars* scalars, gpu::stream_t stream,
                                  const kernels::TunedSparseUpdate* tuned) {
  // The arrived gradients are of the exchange's type (the update widens bf16 as it reads),
  // the replicated ones fp32; a tuned update serves the groups it was compiled for.
  const auto run = [&](Group& g, const Tensor& grad, DType grad_dtype) {
    if (!g.tables) return;
    const kernels::EmbeddingTables& tables = g.tables->tables();
    const kernels::SparseOptimizerParams optimizer = g.tables->optimizer(scalars);
    const bool fits =
        tuned && tuned->shape() == kernels::SparseUpdateShape{tables.row_dtype, tables.dim, optimizer.kind, grad_dtype};
    kernels::embedding_bag_backward_update(
        tables, g.staging->device().bags,
        kernels::PooledGradView{grad.raw(), static_cast<int64_t>(g.lookups.size()) * g.width, grad_dtype}, optimizer,
        g.workspace.raw(), g.workspace.nbytes(), stream, fits ? tuned : nullptr);
  };
  run(whole_, whole_grad_, exchange_);
  run(column_, column_grad_, exchange_);
  run(replica_, replica_grad_, DType::f32);
}

void ShardedGpuEmbeddings::validate(const Batch& global) const { check_bag_ids(global, model_.tables); }

const std::vector<DeviceMirror>& ShardedGpuEmbeddings::mirrors() {
  if (!mirrors_.empty()) return mirrors_;
  for (Group* g : {&whole_, &column_, &replica_})
    if (g->tables)
      for (const DeviceMirror& m : g->tables->mirrors()) mirrors_.push_back(m);
  return mirrors_;
}

std::vector<ShardTensor> ShardedGpuEmbeddings::shard_tensors() {
  std::vector<ShardTensor> out;
  const int64_t per_shard = sparse_state_per_row(optim_.sparse, model_.embedding_dim) > 0 ? 2 : 1;
  for (Group* g : {&whole_, &column_, &replica_}) {
    if (!g->tables) continue;
    const std::vector<DeviceMirror>& list = g->tables->mirrors();
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::size_t k = i / static_cast<std::size_t>(per_shard);
      const dist::ShardLookup& l = g->lookups[k];
      ShardTensor s;
      s.tensor = {list[i].name, list[i].host};
      s.table = l.table;
      s.row_begin = l.row_begin;
      s.col_begin = g->origins[k].col_offset;
      s.primary = g != &replica_ || rank_ == 0;
      out.push_back(std::move(s));
    }
  }
  return out;
}

int64_t ShardedGpuEmbeddings::host_bytes() const {
  int64_t bytes = 0;
  for (const Group* g : {&whole_, &column_, &replica_})
    if (g->tables) bytes += static_cast<int64_t>(g->tables->host_bytes());
  return bytes;
}

int ShardedGpuEmbeddings::host_table_count() const {
  int count = 0;
  for (const Group* g : {&whole_, &column_, &replica_})
    if (g->tables) count += g->tables->host_table_count();
  return count;
}

std::string ShardedGpuEmbeddings::describe() const {
  std::string s;
  for (int t = 0; t < model_.num_tables(); ++t) {
    const dist::TableShard& ts = plan_.tables[static_cast<std::size_t>(t)];
    s += (t ? ", " : "") + model_.tables[static_cast<std::size_t>(t)].name + ":" + dist::sharding_type_name(ts.type) +
         (ts.type == dist::ShardingType::table_wise ? "@" + std::to_string(ts.owner) : "");
  }
  return s;
}

}  // namespace hetrec::model::gpu_model
