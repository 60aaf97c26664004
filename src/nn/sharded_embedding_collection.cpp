#include "nn/sharded_embedding_collection.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "core/error.h"
#include "optim/sparse_update.h"

namespace hetrec::inline nn {

// One table's shard on this rank: a one-table EmbeddingCollection over the block, and
// the batch of bags it served in the last forward (routed tables: every source rank's
// samples in rank order, i.e. global sample order; replicated tables: the local samples).
struct ShardedEmbeddingCollection::Held {
  std::unique_ptr<EmbeddingCollection> shard;
  int64_t row_begin = 0;
  int col_begin = 0;
  int cols = 0;
  bool primary = true;  // writes this block to checkpoints (replicas write once)
  Batch batch;
  std::vector<int64_t> source_first;  // routed: first sample of each source rank in `batch`
  std::vector<float> pooled;          // batch.size x cols
};

ShardedEmbeddingCollection::ShardedEmbeddingCollection(const EmbeddingSpec& spec, const OptimConfig& optim,
                                                       uint64_t seed, dist::ShardingPlan plan,
                                                       dist::ProcessGroup& group)
    : spec_(spec), optim_(optim), plan_(std::move(plan)), group_(group) {
  HETREC_CHECK(plan_.world_size == group_.size() && plan_.tables.size() == spec_.tables.size(),
               "sharding plan for this group and model");
  const int me = group_.rank();
  held_.resize(spec_.tables.size());
  for (std::size_t t = 0; t < spec_.tables.size(); ++t) {
    const dist::TableShard& ts = plan_.tables[t];
    if (!ts.holds(me)) continue;
    if (ts.type == dist::ShardingType::column_wise && optim.sparse == OptimizerKind::rowwise_adagrad &&
        spec.row_dtype != DType::f32)
      throw ConfigError("recipe.sharding.tables." + spec.tables[t].name +
                        ": column_wise sharding with row-wise Adagrad supports fp32 rows only (model.row_dtype)");
    auto held = std::make_unique<Held>();
    held->row_begin = ts.row_begin[static_cast<std::size_t>(me)];
    held->col_begin = ts.col_begin[static_cast<std::size_t>(me)];
    held->cols = ts.cols_of(me);
    held->primary = ts.type != dist::ShardingType::replicated || me == 0;
    TableConfig block = spec.tables[t];
    block.rows = ts.rows_of(me);
    block.pooling = Pooling::sum;  // the requester divides mean-pooled bags by their full length
    const EmbeddingSpec block_spec{{block}, held->cols, spec.row_dtype};
    const TableOrigin origin{static_cast<int>(t), held->row_begin, spec.tables[t].rows, held->col_begin};
    held->shard = std::make_unique<EmbeddingCollection>(block_spec, optim, seed, std::vector<TableOrigin>{origin});
    held_[t] = std::move(held);
  }
}

ShardedEmbeddingCollection::~ShardedEmbeddingCollection() = default;

bool ShardedEmbeddingCollection::serves(int t, int rank) const {
  const dist::TableShard& ts = plan_.tables[static_cast<std::size_t>(t)];
  return ts.routed() && ts.holds(rank);
}

namespace {

void check_local_batch(const Batch& b, const EmbeddingSpec& spec) {
  const int num = static_cast<int>(spec.tables.size());
  if (b.num_tables != num || b.offsets.size() != static_cast<std::size_t>(num * b.size + 1) ||
      b.offsets.front() != 0 || static_cast<std::size_t>(b.offsets.back()) != b.ids.size())
    throw DataError("batch (first sample " + std::to_string(b.first_sample) + "): expected " + std::to_string(num) +
                    " sparse features with tables x samples + 1 offsets ending at the id count");
  for (int t = 0; t < num; ++t)
    for (int64_t s = 0; s < b.size; ++s) {
      if (b.bag_end(t, s) < b.bag_begin(t, s))
        throw DataError("batch (first sample " + std::to_string(b.first_sample) + "): offsets of table " +
                        std::to_string(t) + " decrease at sample " + std::to_string(s));
      for (int64_t i = b.bag_begin(t, s); i < b.bag_end(t, s); ++i) {
        const int32_t id = b.ids[static_cast<std::size_t>(i)];
        if (id < 0 || id >= spec.tables[static_cast<std::size_t>(t)].rows)
          throw DataError("embedding table \"" + spec.tables[static_cast<std::size_t>(t)].name + "\" (table " +
                          std::to_string(t) + "): sample " + std::to_string(s) + " of the batch (sample " +
                          std::to_string(b.first_sample + s) + " of its source) has id " + std::to_string(id) +
                          ", expected an id in [0, " + std::to_string(spec.tables[static_cast<std::size_t>(t)].rows) +
                          ")");
      }
    }
}

}  // namespace

void ShardedEmbeddingCollection::forward(const Batch& local, float* pooled) {
  check_local_batch(local, spec_);
  const int n = group_.size(), me = group_.rank(), num = num_tables(), dim = spec_.dim;
  const int64_t b_size = local.size;
  local_size_ = b_size;
  bag_length_.assign(static_cast<std::size_t>(num * b_size), 0);
  for (int t = 0; t < num; ++t)
    for (int64_t b = 0; b < b_size; ++b)
      bag_length_[static_cast<std::size_t>(t * b_size + b)] = static_cast<int32_t>(local.bag_end(t, b) - local.bag_begin(t, b));

  // Ids to their owners: message to rank d = [B, then per table d serves: B counts, ids].
  sent_.assign(static_cast<std::size_t>(n), std::vector<std::vector<int32_t>>(static_cast<std::size_t>(num)));
  std::vector<std::vector<int32_t>> out(static_cast<std::size_t>(n));
  for (int d = 0; d < n; ++d) {
    auto& msg = out[static_cast<std::size_t>(d)];
    msg.push_back(static_cast<int32_t>(b_size));
    for (int t = 0; t < num; ++t) {
      if (!serves(t, d)) continue;
      const dist::TableShard& ts = plan_.tables[static_cast<std::size_t>(t)];
      const int64_t lo = ts.row_begin[static_cast<std::size_t>(d)], hi = ts.row_end[static_cast<std::size_t>(d)];
      auto& counts = sent_[static_cast<std::size_t>(d)][static_cast<std::size_t>(t)];
      counts.assign(static_cast<std::size_t>(b_size), 0);
      std::vector<int32_t> ids;
      for (int64_t b = 0; b < b_size; ++b)
        for (int64_t i = local.bag_begin(t, b); i < local.bag_end(t, b); ++i) {
          const int32_t id = local.ids[static_cast<std::size_t>(i)];
          if (id < lo || id >= hi) continue;
          ids.push_back(id);
          ++counts[static_cast<std::size_t>(b)];
        }
      msg.insert(msg.end(), counts.begin(), counts.end());
      msg.insert(msg.end(), ids.begin(), ids.end());
    }
  }
  const auto in = dist::exchange(group_, out, "all_to_all_v(embedding ids)");

  // Serve: bags of every source, in rank order, as one batch per held table.
  source_size_.assign(static_cast<std::size_t>(n), 0);
  received_.assign(static_cast<std::size_t>(n), std::vector<std::vector<int32_t>>(static_cast<std::size_t>(num)));
  for (int t = 0; t < num; ++t) {
    if (!serves(t, me)) continue;
    Held& h = *held_[static_cast<std::size_t>(t)];
    h.batch = Batch{};
    h.batch.num_tables = 1;
    h.batch.offsets.assign(1, 0);
    h.source_first.assign(static_cast<std::size_t>(n), 0);
  }
  for (int s = 0; s < n; ++s) {
    const auto& msg = in[static_cast<std::size_t>(s)];
    std::size_t pos = 0;
    const int64_t bs = msg.at(pos++);
    source_size_[static_cast<std::size_t>(s)] = bs;
    for (int t = 0; t < num; ++t) {
      if (!serves(t, me)) continue;
      Held& h = *held_[static_cast<std::size_t>(t)];
      h.source_first[static_cast<std::size_t>(s)] = h.batch.size;
      auto& counts = received_[static_cast<std::size_t>(s)][static_cast<std::size_t>(t)];
      counts.assign(msg.begin() + static_cast<std::ptrdiff_t>(pos), msg.begin() + static_cast<std::ptrdiff_t>(pos + static_cast<std::size_t>(bs)));
      pos += static_cast<std::size_t>(bs);
      for (int64_t b = 0; b < bs; ++b) {
        for (int32_t k = 0; k < counts[static_cast<std::size_t>(b)]; ++k)
          h.batch.ids.push_back(static_cast<int32_t>(msg.at(pos++) - h.row_begin));
        h.batch.offsets.push_back(static_cast<int32_t>(h.batch.ids.size()));
      }
      h.batch.size += bs;
    }
  }
  // Pool and answer: per source, per table, the sums of its non-empty bags.
  for (int t = 0; t < num; ++t) {
    if (!serves(t, me)) continue;
    Held& h = *held_[static_cast<std::size_t>(t)];
    h.pooled.resize(static_cast<std::size_t>(h.batch.size * h.cols));
    h.shard->forward(h.batch, h.pooled.data());
  }
  std::vector<std::vector<float>> answer(static_cast<std::size_t>(n));
  for (int s = 0; s < n; ++s)
    for (int t = 0; t < num; ++t) {
      if (!serves(t, me)) continue;
      const Held& h = *held_[static_cast<std::size_t>(t)];
      const auto& counts = received_[static_cast<std::size_t>(s)][static_cast<std::size_t>(t)];
      for (int64_t b = 0; b < source_size_[static_cast<std::size_t>(s)]; ++b) {
        if (counts[static_cast<std::size_t>(b)] == 0) continue;
        const float* row = h.pooled.data() + (h.source_first[static_cast<std::size_t>(s)] + b) * h.cols;
        // The exchange's element type: bf16 rounds every value sent (the GPU engine's
        // bf16 all-to-all).
        for (int c = 0; c < h.cols; ++c)
          answer[static_cast<std::size_t>(s)].push_back(dist::exchanged_value(row[c], plan_.exchange_dtype));
      }
    }
  const auto back = dist::exchange(group_, answer, "all_to_all_v(pooled embeddings)");

  // Combine: row_wise partial sums in rank order, column slices in place.
  for (int64_t b = 0; b < b_size; ++b)
    for (int t = 0; t < num; ++t)
      if (plan_.tables[static_cast<std::size_t>(t)].routed()) std::fill_n(pooled + (b * num + t) * dim, dim, 0.0f);
  for (int d = 0; d < n; ++d) {
    std::size_t pos = 0;
    const auto& msg = back[static_cast<std::size_t>(d)];
    for (int t = 0; t < num; ++t) {
      if (!serves(t, d)) continue;
      const dist::TableShard& ts = plan_.tables[static_cast<std::size_t>(t)];
      const int c0 = ts.col_begin[static_cast<std::size_t>(d)], w = ts.cols_of(d);
      const auto& counts = sent_[static_cast<std::size_t>(d)][static_cast<std::size_t>(t)];
      for (int64_t b = 0; b < b_size; ++b) {
        if (counts[static_cast<std::size_t>(b)] == 0) continue;
        float* o = pooled + (b * num + t) * dim + c0;
        for (int c = 0; c < w; ++c) o[c] += msg.at(pos++);
      }
    }
  }
  // Replicated tables: a local lookup of the local bags.
  for (int t = 0; t < num; ++t) {
    if (plan_.tables[static_cast<std::size_t>(t)].routed()) continue;
    Held& h = *held_[static_cast<std::size_t>(t)];
    h.batch = Batch{};
    h.batch.num_tables = 1;
    h.batch.size = b_size;
    h.batch.first_sample = local.first_sample;
    const int64_t lo = local.bag_begin(t, 0);
    h.batch.ids.assign(local.ids.begin() + lo, local.ids.begin() + local.bag_begin(t, b_size));
    for (int64_t b = 0; b <= b_size; ++b) h.batch.offsets.push_back(static_cast<int32_t>(local.bag_begin(t, b) - lo));
    h.pooled.resize(static_cast<std::size_t>(b_size * dim));
    h.shard->forward(h.batch, h.pooled.data());
    for (int64_t b = 0; b < b_size; ++b)
      std::copy_n(h.pooled.data() + b * dim, dim, pooled + (b * num + t) * dim);
  }
  for (int t = 0; t < num; ++t) {
    if (spec_.tables[static_cast<std::size_t>(t)].pooling != Pooling::mean) continue;
    for (int64_t b = 0; b < b_size; ++b) {
      const int32_t len = bag_length_[static_cast<std::size_t>(t * b_size + b)];
      if (len == 0) continue;
      const float inv_len = 1.0f / static_cast<float>(len);
      float* o = pooled + (b * num + t) * dim;
      for (int d = 0; d < dim; ++d) o[d] *= inv_len;
    }
  }
}

void ShardedEmbeddingCollection::backward_update(const float* grad_pooled, float lr, int64_t step) {
  const int n = group_.size(), me = group_.rank(), num = num_tables(), dim = spec_.dim;
  const int64_t b_size = local_size_;
  // The gradient of bag b as the single-rank backward adds it: g, or g / length for a
  // mean-pooled bag (the same product); for a routed table, g as the exchange carries it
  // (bf16: rounded, as the GPU engine sends it before its update divides). Replicated
  // tables' gradients are gathered in fp32.
  auto bag_grad = [&](int t, int64_t b, int c) {
    float g = grad_pooled[(b * num + t) * dim + c];
    if (plan_.tables[static_cast<std::size_t>(t)].routed()) g = dist::exchanged_value(g, plan_.exchange_dtype);
    if (spec_.tables[static_cast<std::size_t>(t)].pooling != Pooling::mean) return g;
    return g * (1.0f / static_cast<float>(bag_length_[static_cast<std::size_t>(t * b_size + b)]));
  };
  std::vector<std::vector<float>> out(static_cast<std::size_t>(n));
  for (int d = 0; d < n; ++d)
    for (int t = 0; t < num; ++t) {
      if (!serves(t, d)) continue;
      const dist::TableShard& ts = plan_.tables[static_cast<std::size_t>(t)];
      const int c0 = ts.col_begin[static_cast<std::size_t>(d)], c1 = ts.col_end[static_cast<std::size_t>(d)];
      const auto& counts = sent_[static_cast<std::size_t>(d)][static_cast<std::size_t>(t)];
      for (int64_t b = 0; b < b_size; ++b) {
        if (counts[static_cast<std::size_t>(b)] == 0) continue;
        for (int c = c0; c < c1; ++c) out[static_cast<std::size_t>(d)].push_back(bag_grad(t, b, c));
      }
    }
  const auto in = dist::exchange(group_, out, "all_to_all_v(embedding gradients)");

  std::vector<std::vector<float>> grads(static_cast<std::size_t>(num));
  for (int t = 0; t < num; ++t)
    if (serves(t, me)) {
      const Held& h = *held_[static_cast<std::size_t>(t)];
      grads[static_cast<std::size_t>(t)].assign(static_cast<std::size_t>(h.batch.size * h.cols), 0.0f);
    }
  for (int s = 0; s < n; ++s) {
    std::size_t pos = 0;
    const auto& msg = in[static_cast<std::size_t>(s)];
    for (int t = 0; t < num; ++t) {
      if (!serves(t, me)) continue;
      const Held& h = *held_[static_cast<std::size_t>(t)];
      const auto& counts = received_[static_cast<std::size_t>(s)][static_cast<std::size_t>(t)];
      for (int64_t b = 0; b < source_size_[static_cast<std::size_t>(s)]; ++b) {
        if (counts[static_cast<std::size_t>(b)] == 0) continue;
        float* g = grads[static_cast<std::size_t>(t)].data() + (h.source_first[static_cast<std::size_t>(s)] + b) * h.cols;
        for (int c = 0; c < h.cols; ++c) g[c] = msg.at(pos++);
      }
    }
  }
  // Updates, table by table (the collectives inside run in table order on every rank).
  for (int t = 0; t < num; ++t) {
    const dist::TableShard& ts = plan_.tables[static_cast<std::size_t>(t)];
    if (ts.routed()) {
      if (!ts.holds(me)) continue;
      Held& h = *held_[static_cast<std::size_t>(t)];
      if (ts.type == dist::ShardingType::column_wise && optim_.sparse == OptimizerKind::rowwise_adagrad)
        update_column_rowwise(t, h.batch, grads[static_cast<std::size_t>(t)], lr);
      else
        h.shard->backward_update(h.batch, grads[static_cast<std::size_t>(t)].data(), lr, step);
      continue;
    }
    // Replicated: every rank gathers every rank's bags and gradients and applies the
    // same update.
    Held& h = *held_[static_cast<std::size_t>(t)];
    std::vector<int32_t> bags(h.batch.offsets.begin(), h.batch.offsets.end());
    bags.insert(bags.end(), h.batch.ids.begin(), h.batch.ids.end());
    std::vector<float> mine(static_cast<std::size_t>(b_size * dim));
    for (int64_t b = 0; b < b_size; ++b)
      for (int c = 0; c < dim; ++c) mine[static_cast<std::size_t>(b * dim + c)] = bag_grad(t, b, c);
    const std::string name = spec_.tables[static_cast<std::size_t>(t)].name;
    const auto all_bags = dist::all_gather_v(group_, bags, "all_gather(ids of replicated table '" + name + "')");
    const auto all_grads = dist::all_gather_v(group_, mine, "all_gather(gradients of replicated table '" + name + "')");
    Batch global;
    global.num_tables = 1;
    global.offsets.assign(1, 0);
    std::vector<float> grad;
    for (int s = 0; s < n; ++s) {
      const auto& m = all_bags[static_cast<std::size_t>(s)];
      const int64_t bs = static_cast<int64_t>(all_grads[static_cast<std::size_t>(s)].size()) / dim;
      const int32_t base = global.offsets.back();
      for (int64_t b = 1; b <= bs; ++b) global.offsets.push_back(base + m.at(static_cast<std::size_t>(b)));
      global.ids.insert(global.ids.end(), m.begin() + bs + 1, m.end());
      global.size += bs;
      grad.insert(grad.end(), all_grads[static_cast<std::size_t>(s)].begin(), all_grads[static_cast<std::size_t>(s)].end());
    }
    h.shard->backward_update(global, grad.data(), lr, step);
  }
}

void ShardedEmbeddingCollection::update_column_rowwise(int t, const Batch& batch, const std::vector<float>& grad,
                                                       float lr) {
  Held& h = *held_[static_cast<std::size_t>(t)];
  const auto state = h.shard->state();
  float* weight = state.at(0).tensor.data<float>();
  float* accumulator = state.at(1).tensor.data<float>();
  const int cols = h.cols;
  // (id, sample) in id order, samples ascending: the single-rank summation order.
  std::vector<uint64_t> keys;
  keys.reserve(batch.ids.size());
  for (int64_t b = 0; b < batch.size; ++b)
    for (int64_t i = batch.bag_begin(0, b); i < batch.bag_end(0, b); ++i)
      keys.push_back((static_cast<uint64_t>(static_cast<uint32_t>(batch.ids[static_cast<std::size_t>(i)])) << 32) |
                     static_cast<uint64_t>(b));
  std::sort(keys.begin(), keys.end());
  std::vector<std::size_t> runs;
  for (std::size_t i = 0; i < keys.size(); ++i)
    if (i == 0 || (keys[i] >> 32) != (keys[i - 1] >> 32)) runs.push_back(i);
  runs.push_back(keys.size());
  const std::size_t unique = runs.size() - 1;
  std::vector<float> sums(unique * static_cast<std::size_t>(cols), 0.0f), squares(unique, 0.0f);
  for (std::size_t u = 0; u < unique; ++u) {
    float* g = sums.data() + u * static_cast<std::size_t>(cols);
    for (std::size_t k = runs[u]; k < runs[u + 1]; ++k) {
      const auto b = static_cast<int64_t>(static_cast<uint32_t>(keys[k]));
      for (int c = 0; c < cols; ++c) g[c] += grad[static_cast<std::size_t>(b * cols + c)];
    }
    for (int c = 0; c < cols; ++c) squares[u] += g[c] * g[c];
  }
  // Every column owner saw the same ids, so the unique rows line up across ranks.
  group_.all_reduce_sum(std::span<float>(squares),
                        "all_reduce(row-wise Adagrad squares of column_wise table '" +
                            spec_.tables[static_cast<std::size_t>(t)].name + "')");
  const float eps = static_cast<float>(optim_.eps);
  const float full_dim = static_cast<float>(spec_.dim);
  for (std::size_t u = 0; u < unique; ++u) {
    const auto id = static_cast<int64_t>(keys[runs[u]] >> 32);
    rowwise_adagrad_apply(weight + id * cols, accumulator + id, sums.data() + u * static_cast<std::size_t>(cols), cols,
                          lr, eps, squares[u] / full_dim);
  }
}

std::vector<ShardTensor> ShardedEmbeddingCollection::state() {
  std::vector<ShardTensor> out;
  for (std::size_t t = 0; t < held_.size(); ++t) {
    if (!held_[t]) continue;
    const Held& h = *held_[t];
    for (auto& nt : h.shard->state()) {
      const bool row_accumulator = nt.tensor.rank() == 1;
      // A row-wise accumulator of a column_wise table is the same on every column owner:
      // the owner of column 0 is its primary holder.
      const bool primary = h.primary && (!row_accumulator || h.col_begin == 0);
      out.push_back({std::move(nt), static_cast<int>(t), h.row_begin, row_accumulator ? 0 : h.col_begin, primary});
    }
  }
  return out;
}

std::vector<NamedTensor> ShardedEmbeddingCollection::gather_full_state() {
  return gather_full_tables(state(), spec_, optim_.sparse, group_);
}

std::vector<NamedTensor> gather_full_tables(const std::vector<ShardTensor>& mine, const EmbeddingSpec& spec,
                                            OptimizerKind sparse, dist::ProcessGroup& group) {
  // Every rank sends its primary blocks: per block a header (name index, row_begin,
  // rows, col_begin, cols) and the fp32/16-bit bytes.
  std::vector<NamedTensor> full;
  const int64_t state_per_row = sparse_state_per_row(sparse, spec.dim);
  for (std::size_t t = 0; t < spec.tables.size(); ++t) {
    const TableConfig& tc = spec.tables[t];
    full.push_back({"embedding." + tc.name + ".weight", Tensor::zeros({tc.rows, spec.dim}, spec.row_dtype)});
    if (state_per_row == 1) full.push_back({"embedding." + tc.name + ".accumulator", Tensor::zeros({tc.rows}, DType::f32)});
    else if (state_per_row > 1)
      full.push_back({"embedding." + tc.name + ".accumulator", Tensor::zeros({tc.rows, spec.dim}, DType::f32)});
  }
  std::vector<uint8_t> bytes;
  auto put = [&bytes](const void* p, std::size_t n) {
    const auto* c = static_cast<const uint8_t*>(p);
    bytes.insert(bytes.end(), c, c + n);
  };
  for (const ShardTensor& s : mine) {
    if (!s.primary) continue;
    int64_t index = -1;
    for (std::size_t k = 0; k < full.size(); ++k)
      if (full[k].name == s.tensor.name) index = static_cast<int64_t>(k);
    HETREC_CHECK(index >= 0, "shard tensor name " + s.tensor.name);
    const int64_t rows = s.tensor.tensor.dim(0);
    const int64_t cols = s.tensor.tensor.rank() == 2 ? s.tensor.tensor.dim(1) : 1;
    const int64_t header[5] = {index, s.row_begin, rows, s.col_begin, cols};
    put(header, sizeof header);
    put(s.tensor.tensor.raw(), s.tensor.tensor.nbytes());
  }
  const auto all = dist::all_gather_v(group, bytes, "all_gather(embedding shards)");
  for (const auto& blob : all) {
    std::size_t pos = 0;
    while (pos < blob.size()) {
      int64_t header[5];
      std::memcpy(header, blob.data() + pos, sizeof header);
      pos += sizeof header;
      Tensor& dst = full.at(static_cast<std::size_t>(header[0])).tensor;
      const std::size_t elem = dtype_size(dst.dtype());
      const int64_t full_cols = dst.rank() == 2 ? dst.dim(1) : 1;
      auto* base = static_cast<uint8_t*>(dst.raw());
      for (int64_t r = 0; r < header[2]; ++r) {
        std::memcpy(base + static_cast<std::size_t>((header[1] + r) * full_cols + header[3]) * elem, blob.data() + pos,
                    static_cast<std::size_t>(header[4]) * elem);
        pos += static_cast<std::size_t>(header[4]) * elem;
      }
    }
  }
  return full;
}

}  // namespace hetrec::nn::nn
