#include "kernels/embedding_bag_backward.h"

#include <algorithm>
#include <bit>
#include <string>

#include "core/error.h"
#include "gpu/check.h"
#include "gpu/device.h"
#include "gpu/fp_ops.h"
#include "gpu/kernel_attributes.h"
#include "gpu/warp.h"
#include "kernels/embedding_lanes.h"
#include "kernels/launch.h"
#include "kernels/radix_sort.h"
#include "kernels/row_vector.cuh"
#include "kernels/scan.h"
#include "kernels/sparse_rounding.h"

namespace hetrec::kernels {

namespace {

constexpr int kBlockThreads = 256;
static_assert(kBlockThreads % gpu::kWarpSize == 0, "the update's group reductions need whole warps");
// Marks ids that failed validation: sorts after every real row and is skipped.
constexpr uint32_t kInvalidKey = 0xFFFFFFFFu;
// Occurrence gradients requested together before the first is added.
constexpr int kGradsInFlight = 4;
// Occurrences one group sums for one row before the row is split into chunks summed in
// parallel: in a skewed batch a hot row occurs 10^4 to 10^6 times, which one group would
// sum for milliseconds while the rest of the device idles.
constexpr uint32_t kLongSegment = 64;
// Persistent update grids ask for this many resident blocks per multiprocessor (64
// registers a thread): the update is bound by the latency of its dependent loads, so
// more warps in flight beat more registers per thread (measured on the H200, the full
// MLPerf step's embedding backward at batch 128K: 18.2 ms against 19.8 ms with the 75
// registers the compiler picks unbounded).
constexpr int kUpdateMinBlocksPerSm = 4;
// Tables whose stochastic rounding key a block of the update keeps in shared memory
// (8 bytes each: 32 KB, below the 48 KB a launch may use without opting in).
constexpr int kMaxCachedTableKeys = 4096;
constexpr std::size_t kAlign = 256;

std::size_t aligned(std::size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

// Global row of every id (the sort key) and its bag t * B + b (the value). A block takes
// kBlockThreads consecutive bags, whose ids form one contiguous range: its threads walk
// that range id by id (coalesced reads and writes, whatever the bag lengths) and find
// each id's bag by a binary search over the block's bag ends in shared memory.
__global__ void __launch_bounds__(kBlockThreads)
    build_sort_keys_kernel(const int32_t* __restrict__ offsets, const int32_t* __restrict__ ids,
                           const int64_t* __restrict__ row_offsets, int64_t batch, int num_tables,
                           uint32_t* __restrict__ keys, uint32_t* __restrict__ bag_of) {
  __shared__ int32_t bag_end[kBlockThreads];
  __shared__ int64_t bag_first_row[kBlockThreads];
  __shared__ int64_t bag_rows[kBlockThreads];
  const int64_t num_bags = batch * num_tables;
  const int64_t first_bag = static_cast<int64_t>(blockIdx.x) * kBlockThreads;
  const int count = static_cast<int>(num_bags - first_bag < kBlockThreads ? num_bags - first_bag : kBlockThreads);
  if (static_cast<int>(threadIdx.x) < count) {
    const int64_t bag = first_bag + threadIdx.x;
    const int t = static_cast<int>(bag / batch);
    bag_end[threadIdx.x] = offsets[bag + 1];
    bag_first_row[threadIdx.x] = row_offsets[t];
    bag_rows[threadIdx.x] = row_offsets[t + 1] - row_offsets[t];
  }
  __syncthreads();
  const int32_t end = bag_end[count - 1];
  for (int32_t p = offsets[first_bag] + static_cast<int32_t>(threadIdx.x); p < end; p += kBlockThreads) {
    int lo = 0, hi = count - 1;  // the first bag of the block that ends after p
    while (lo < hi) {
      const int mid = (lo + hi) / 2;
      if (bag_end[mid] > p) hi = mid;
      else lo = mid + 1;
    }
    const int32_t id = ids[p];
    keys[p] = id >= 0 && id < bag_rows[lo] ? static_cast<uint32_t>(bag_first_row[lo] + id) : kInvalidKey;
    bag_of[p] = static_cast<uint32_t>(first_bag + lo);
  }
}

__global__ void __launch_bounds__(kBlockThreads)
    mark_segment_heads_kernel(const uint32_t* __restrict__ keys, const int32_t* num_items, int64_t capacity,
                              uint32_t* __restrict__ heads) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kBlockThreads + threadIdx.x;
  if (i >= capacity) return;
  const int64_t n = *num_items;
  heads[i] = i < n && (i == 0 || keys[i] != keys[i - 1]) ? 1u : 0u;
}

// segment_start[u] = first sorted position of unique row u; segment_start[U] = n.
__global__ void __launch_bounds__(kBlockThreads)
    segment_starts_kernel(const uint32_t* __restrict__ heads, const uint32_t* __restrict__ unique_index,
                          const int32_t* num_items, const uint32_t* num_unique, int64_t capacity,
                          uint32_t* __restrict__ segment_start) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kBlockThreads + threadIdx.x;
  if (i >= capacity) return;
  if (heads[i]) segment_start[unique_index[i]] = static_cast<uint32_t>(i);
  if (i == 0) segment_start[*num_unique] = static_cast<uint32_t>(*num_items);
}

// The table of bag t * B + b (bags are numbered below 2^32, so a 32-bit division).
__device__ inline int table_of_bag(uint32_t bag, int64_t batch) {
  return static_cast<int>(bag / static_cast<uint32_t>(batch));
}

// a * b rounded once, never fused into a following add: keeps the update rules' rounding
// identical to a plain host evaluation of the same expressions.
__device__ inline float mul(float a, float b) { return gpu::mul_rn(a, b); }

template <int VEC, int UNITS>
__device__ inline void zero(float (&g)[UNITS][VEC]) {
#pragma unroll
  for (int k = 0; k < UNITS; ++k)
#pragma unroll
    for (int i = 0; i < VEC; ++i) g[k][i] = 0.0f;
}

// Adds to g this lane's share of the gradients of N occurrences starting at p, loading
// all N before adding any (N loads in flight), in order; mean-pooled tables scale each
// by 1 / its bag length, as the forward did.
template <int N, int VEC, int UNITS>
__device__ inline void add_batch(float (&g)[UNITS][VEC], uint32_t p, int lane, int lanes,
                                 const uint32_t* __restrict__ sorted_bags, const int32_t* __restrict__ offsets,
                                 int64_t first_bag, bool mean, const float* __restrict__ table_grad,
                                 int64_t grad_stride, int dim) {
  float v[N][UNITS][VEC];
  float inv_len[N];
#pragma unroll
  for (int q = 0; q < N; ++q) {
    const int64_t bag = static_cast<int64_t>(sorted_bags[p + q]);
    inv_len[q] = mean ? 1.0f / static_cast<float>(offsets[bag + 1] - offsets[bag]) : 1.0f;
    const float* src = table_grad + (bag - first_bag) * grad_stride;
#pragma unroll
    for (int k = 0; k < UNITS; ++k) {
      const int e = (lane + k * lanes) * VEC;
      if (e < dim) {
        load_vec<VEC>(src + e, v[q][k]);
      } else {
#pragma unroll
        for (int i = 0; i < VEC; ++i) v[q][k][i] = 0.0f;
      }
    }
  }
  if (mean) {
#pragma unroll
    for (int q = 0; q < N; ++q)
#pragma unroll
      for (int k = 0; k < UNITS; ++k)
#pragma unroll
        for (int i = 0; i < VEC; ++i) g[k][i] += mul(v[q][k][i], inv_len[q]);
  } else {
#pragma unroll
    for (int q = 0; q < N; ++q)
#pragma unroll
      for (int k = 0; k < UNITS; ++k)
#pragma unroll
        for (int i = 0; i < VEC; ++i) g[k][i] += v[q][k][i];
  }
}

// Adds to g this lane's share of the pooled gradients of sorted occurrences
// [begin, end), in order. Every occurrence of one row lies in the same table, so the
// table (and its pooling) is worked out once per row by the caller, and an occurrence's
// sample is its bag less the table's first bag: no division per occurrence. Whole
// batches of kGradsInFlight first, then the rest in a batch of 2 and one of 1: most rows
// of a skewed batch occur once or twice, and a fixed-width batch would spend most of its
// instructions on empty slots.
template <int VEC, int UNITS>
__device__ inline void add_occurrences(float (&g)[UNITS][VEC], uint32_t begin, uint32_t end, int lane, int lanes,
                                       const uint32_t* __restrict__ sorted_bags, const int32_t* __restrict__ offsets,
                                       int table, bool mean, const float* __restrict__ grad, int64_t grad_stride,
                                       int64_t batch, int dim) {
  const int64_t first_bag = static_cast<int64_t>(table) * batch;
  const float* table_grad = grad + static_cast<int64_t>(table) * dim;
  uint32_t p = begin;
  for (; p + kGradsInFlight <= end; p += kGradsInFlight)
    add_batch<kGradsInFlight>(g, p, lane, lanes, sorted_bags, offsets, first_bag, mean, table_grad, grad_stride, dim);
  if (p + 2 <= end) {
    add_batch<2>(g, p, lane, lanes, sorted_bags, offsets, first_bag, mean, table_grad, grad_stride, dim);
    p += 2;
  }
  if (p < end) add_batch<1>(g, p, lane, lanes, sorted_bags, offsets, first_bag, mean, table_grad, grad_stride, dim);
}

// The chunk length of a row occurring len > kLongSegment times: ceil(sqrt(len)), at least
// kLongSegment. A row then has about sqrt(len) chunks of about sqrt(len) occurrences, so
// neither one chunk's sum nor the sum of a row's chunk partials is a long serial chain
// (a row met 650 000 times: 807 chunks of 807, not 10 157 partials of 64 added by one
// group). Integer arithmetic only, so the chunks are the same on every launch.
__device__ inline uint32_t chunk_length(uint32_t len) {
  uint32_t r = static_cast<uint32_t>(sqrtf(static_cast<float>(len)));
  while (static_cast<uint64_t>(r) * r < len) ++r;
  while (r > 1 && static_cast<uint64_t>(r - 1) * (r - 1) >= len) --r;
  return r > kLongSegment ? r : kLongSegment;
}

// Rows occurring more than kLongSegment times are split into chunks of chunk_length
// occurrences: chunks[u] is their count (0 for a short row).
__global__ void __launch_bounds__(kBlockThreads)
    count_chunks_kernel(const uint32_t* __restrict__ segment_start, const uint32_t* __restrict__ num_unique,
                        int64_t capacity, uint32_t* __restrict__ chunks) {
  const int64_t u = static_cast<int64_t>(blockIdx.x) * kBlockThreads + threadIdx.x;
  if (u >= capacity) return;
  uint32_t c = 0;
  if (u < *num_unique) {
    const uint32_t len = segment_start[u + 1] - segment_start[u];
    if (len > kLongSegment) {
      const uint32_t l = chunk_length(len);
      c = (len + l - 1) / l;
    }
  }
  chunks[u] = c;
}

// owner[chunk_start[u] + j] = u for every chunk j of a long row u.
__global__ void __launch_bounds__(kBlockThreads)
    chunk_owner_kernel(const uint32_t* __restrict__ chunks, const uint32_t* __restrict__ chunk_start,
                       const uint32_t* __restrict__ num_unique, int64_t capacity, uint32_t* __restrict__ owner) {
  const int64_t u = static_cast<int64_t>(blockIdx.x) * kBlockThreads + threadIdx.x;
  if (u >= capacity || u >= *num_unique) return;
  for (uint32_t j = 0; j < chunks[u]; ++j) owner[chunk_start[u] + j] = static_cast<uint32_t>(u);
}

// partial[c] = the gradient sum of chunk c's occurrences, one group of lanes per chunk,
// persistent over the chunks (their count lives on the device).
template <int VEC, int UNITS>
__global__ void __launch_bounds__(kBlockThreads)
    chunk_partial_kernel(const uint32_t* __restrict__ owner, const uint32_t* __restrict__ chunk_start,
                         const uint32_t* __restrict__ num_chunks, const uint32_t* __restrict__ segment_start,
                         const uint32_t* __restrict__ sorted_bags, const int32_t* __restrict__ offsets,
                         const uint8_t* __restrict__ mean_pooling, const float* __restrict__ grad, int64_t grad_stride,
                         int64_t batch, int dim, int lanes, const StepScalars* __restrict__ scalars,
                         float* __restrict__ partial) {
  if (scalars->skip_update) return;
  const int lane = static_cast<int>(threadIdx.x) % lanes;
  const int64_t groups = static_cast<int64_t>(gridDim.x) * kBlockThreads / lanes;
  const int64_t count = *num_chunks;
  // No warp collectives here: a group may leave the loop on its own.
  for (int64_t c = (static_cast<int64_t>(blockIdx.x) * kBlockThreads + threadIdx.x) / lanes; c < count; c += groups) {
    const uint32_t u = owner[c];
    const uint32_t j = static_cast<uint32_t>(c) - chunk_start[u];
    const uint32_t row_end = segment_start[u + 1];
    const uint32_t length = chunk_length(row_end - segment_start[u]);
    const uint32_t begin = segment_start[u] + j * length;
    const uint32_t end = begin + length < row_end ? begin + length : row_end;
    const int table = table_of_bag(sorted_bags[begin], batch);
    float g[UNITS][VEC];
    zero(g);
    add_occurrences(g, begin, end, lane, lanes, sorted_bags, offsets, table, mean_pooling[table] != 0, grad,
                    grad_stride, batch, dim);
    float* dst = partial + c * dim;
#pragma unroll
    for (int k = 0; k < UNITS; ++k) {
      const int e = (lane + k * lanes) * VEC;
      if (e < dim) store_vec<VEC>(dst + e, g[k]);
    }
  }
}

// One group of `lanes` threads per unique row, persistent over the rows (the row count
// lives on the device). All lanes of a warp run the same number of iterations, so the
// group reductions below see every lane.
template <class Row, int VEC, int UNITS, SparseOptimizerKind OPT>
__global__ void __launch_bounds__(kBlockThreads, kUpdateMinBlocksPerSm)
    sparse_update_kernel(Row* __restrict__ weights, float* __restrict__ accumulators, void* const* table_weights,
                         float* const* table_accumulators,
                         const uint32_t* __restrict__ sorted_keys, const uint32_t* __restrict__ sorted_bags,
                         const uint32_t* __restrict__ segment_start, const uint32_t* __restrict__ num_unique,
                         const uint32_t* __restrict__ chunks, const uint32_t* __restrict__ chunk_start,
                         const float* __restrict__ partial, const int32_t* __restrict__ offsets,
                         const int64_t* __restrict__ row_offsets, const uint8_t* __restrict__ mean_pooling,
                         const float* __restrict__ grad, int64_t grad_stride, int64_t batch, int dim, int lanes,
                         int64_t total_rows, const StepScalars* __restrict__ scalars, float eps, uint64_t seed,
                         const ShardOrigin* __restrict__ shard_origins, int cached_table_keys) {
  if (scalars->skip_update) return;  // uniform over the grid
  const float lr = scalars->sparse_lr;
  const int64_t step = scalars->step;
  // 16-bit rows: the stochastic rounding keys of the first cached_table_keys tables, made
  // once per block rather than once per row (the rest are made per row).
  extern __shared__ uint64_t table_keys[];
  if constexpr (sizeof(Row) != sizeof(float)) {
    for (int t = static_cast<int>(threadIdx.x); t < cached_table_keys; t += kBlockThreads)
      table_keys[t] = sparse_rounding_table_key(seed, step, shard_origins ? shard_origins[t].table : t);
    __syncthreads();
  }
  const int groups_per_warp = gpu::kWarpSize / lanes;
  const int lane = gpu::lane_id() % lanes;
  const int group = gpu::lane_id() / lanes;
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * kBlockThreads + threadIdx.x) / gpu::kWarpSize;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * kBlockThreads / gpu::kWarpSize;
  const int64_t unique = *num_unique;

  for (int64_t first = warp * groups_per_warp; first < unique; first += warps * groups_per_warp) {
    const int64_t u = first + group;
    bool active = u < unique;
    uint32_t key = kInvalidKey;
    if (active) key = sorted_keys[segment_start[u]];
    if (key >= total_rows) active = false;

    float g[UNITS][VEC];
    zero(g);
    int table = 0;
    if (active) {
      const uint32_t begin = segment_start[u];
      table = table_of_bag(sorted_bags[begin], batch);
      const uint32_t n_chunks = chunks[u];
      if (n_chunks == 0) {
        add_occurrences(g, begin, segment_start[u + 1], lane, lanes, sorted_bags, offsets, table,
                        mean_pooling[table] != 0, grad, grad_stride, batch, dim);
      } else {
        // A long row: its chunk sums, in chunk order.
        const float* src = partial + static_cast<int64_t>(chunk_start[u]) * dim;
#pragma unroll 4
        for (uint32_t c = 0; c < n_chunks; ++c) {
#pragma unroll
          for (int k = 0; k < UNITS; ++k) {
            const int e = (lane + k * lanes) * VEC;
            if (e < dim) {
              float v[VEC];
              load_vec<VEC>(src + static_cast<int64_t>(c) * dim + e, v);
#pragma unroll
              for (int i = 0; i < VEC; ++i) g[k][i] += v[i];
            }
          }
        }
      }
    }

    // Row-wise Adagrad's accumulator grows by the mean of g^2 over the row.
    float row_multiplier = 0.0f;
    if constexpr (OPT == SparseOptimizerKind::rowwise_adagrad) {
      float sq = 0.0f;
#pragma unroll
      for (int k = 0; k < UNITS; ++k)
#pragma unroll
        for (int i = 0; i < VEC; ++i) sq += mul(g[k][i], g[k][i]);
      sq = gpu::group_sum(sq, lanes);  // every lane of the warp takes part
      // Lane 0 alone reads and writes the accumulator; the others get its value by
      // shuffle (lanes of a group are not guaranteed to run in lock step).
      float* acc = nullptr;
      if (active)
        acc = table_accumulators ? table_accumulators[table] + (static_cast<int64_t>(key) - row_offsets[table])
                                 : accumulators + key;
      float old = active && lane == 0 ? *acc : 0.0f;
      old = gpu::shfl(old, 0, lanes);
      if (active) {
        const float a = old + sq / static_cast<float>(dim);
        row_multiplier = lr / (sqrtf(a) + eps);
        if (lane == 0) *acc = a;
      }
    }
    if (!active) continue;

    const int64_t local_row = static_cast<int64_t>(key) - row_offsets[table];
    uint64_t rounding_key = 0;
    if constexpr (sizeof(Row) != sizeof(float)) {
      const uint64_t table_key =
          table < cached_table_keys
              ? table_keys[table]
              : sparse_rounding_table_key(seed, step, shard_origins ? shard_origins[table].table : table);
      if (shard_origins) {
        // A shard draws as its block of the full table does (nn/embedding_collection.cpp).
        const ShardOrigin origin = shard_origins[table];
        rounding_key = sparse_rounding_row_key_of(table_key, local_row + origin.row_offset) +
                       static_cast<uint64_t>(origin.col_offset / 2);
      } else {
        rounding_key = sparse_rounding_row_key_of(table_key, local_row);
      }
    }
    Row* w_row = table_weights ? static_cast<Row*>(table_weights[table]) + local_row * dim
                               : weights + static_cast<int64_t>(key) * dim;
#pragma unroll
    for (int k = 0; k < UNITS; ++k) {
      const int e = (lane + k * lanes) * VEC;
      if (e >= dim) continue;
      float w[VEC];
      load_vec<VEC>(w_row + e, w);
      if constexpr (OPT == SparseOptimizerKind::sgd) {
#pragma unroll
        for (int i = 0; i < VEC; ++i) w[i] = w[i] - mul(lr, g[k][i]);
      } else if constexpr (OPT == SparseOptimizerKind::adagrad) {
        float a[VEC];
        float* a_ptr = (table_accumulators ? table_accumulators[table] + local_row * dim
                                           : accumulators + static_cast<int64_t>(key) * dim) + e;
        load_vec<VEC>(a_ptr, a);
#pragma unroll
        for (int i = 0; i < VEC; ++i) {
          a[i] = a[i] + mul(g[k][i], g[k][i]);
          w[i] = w[i] - mul(lr, g[k][i]) / (sqrtf(a[i]) + eps);
        }
        store_vec<VEC>(a_ptr, a);
      } else {
#pragma unroll
        for (int i = 0; i < VEC; ++i) w[i] = w[i] - mul(row_multiplier, g[k][i]);
      }
      if constexpr (sizeof(Row) == sizeof(float)) {
        store_vec<VEC>(w_row + e, w);
      } else {
        Row out[VEC];
        if constexpr (VEC % 2 == 0) {
          // e is even: elements e + i and e + i + 1 share one draw.
#pragma unroll
          for (int i = 0; i < VEC; i += 2) {
            const uint64_t draw = sparse_rounding_pair_draw(rounding_key, (e + i) / 2);
            out[i] = from_float_sr<Row>(w[i], static_cast<uint32_t>(draw >> 32));
            out[i + 1] = from_float_sr<Row>(w[i + 1], static_cast<uint32_t>(draw));
          }
        } else {
#pragma unroll
          for (int i = 0; i < VEC; ++i)
            out[i] = from_float_sr<Row>(w[i], sparse_rounding_bits(rounding_key, e + i));
        }
        store_raw_vec<VEC>(w_row + e, out);
      }
    }
  }
}

struct UpdateArgs {
  const EmbeddingTables* tables;
  const DeviceBags* bags;
  const float* grad;
  int64_t grad_stride;
  const SparseOptimizerParams* opt;
  const uint32_t* sorted_keys;
  const uint32_t* sorted_bags;
  const uint32_t* segment_start;
  const uint32_t* num_unique;
  const uint32_t* chunks;       // per unique row: chunk count (0: short row)
  const uint32_t* chunk_start;  // per unique row: first chunk
  const uint32_t* num_chunks;
  const uint32_t* owner;        // per chunk: its unique row
  float* partial;               // per chunk: dim floats
  int64_t max_chunks;
  gpu::stream_t stream;
};

// Blocks of a persistent grid of `kernel` over `items` work items of `lanes` threads each:
// as many as the device holds at once, so every block runs from the start (a grid larger
// than one wave leaves a partial last wave idling part of the device).
unsigned persistent_blocks(const void* kernel, int64_t items, int lanes, std::size_t shared_bytes = 0) {
  const int64_t cap = static_cast<int64_t>(gpu::multiprocessor_count(gpu::current_device())) *
                      gpu::resident_blocks_per_multiprocessor(kernel, kBlockThreads, shared_bytes);
  const int64_t wanted = ceil_div<int64_t>(items > 0 ? items : 1, kBlockThreads / lanes);
  return static_cast<unsigned>(wanted < cap ? wanted : cap > 0 ? cap : 1);
}

template <class Row, int VEC, int UNITS, SparseOptimizerKind OPT>
void launch_update(const UpdateArgs& a, int lanes) {
  const int dim = a.tables->dim;
  const void* partial_kernel = reinterpret_cast<const void*>(&chunk_partial_kernel<VEC, UNITS>);
  chunk_partial_kernel<VEC, UNITS><<<persistent_blocks(partial_kernel, a.max_chunks, lanes), kBlockThreads, 0,
                                     a.stream>>>(a.owner, a.chunk_start, a.num_chunks, a.segment_start, a.sorted_bags,
                                                 a.bags->offsets, a.tables->mean_pooling, a.grad, a.grad_stride,
                                                 a.bags->batch, dim, lanes, a.opt->scalars, a.partial);
  HETREC_GPU_CHECK_LAUNCH("chunk_partial_kernel");
  const void* update_kernel = reinterpret_cast<const void*>(&sparse_update_kernel<Row, VEC, UNITS, OPT>);
  const int cached_keys = sizeof(Row) == sizeof(float) ? 0 : std::min(a.tables->num_tables, kMaxCachedTableKeys);
  const std::size_t keys_bytes = static_cast<std::size_t>(cached_keys) * sizeof(uint64_t);
  sparse_update_kernel<Row, VEC, UNITS, OPT><<<persistent_blocks(update_kernel, a.bags->max_ids, lanes, keys_bytes),
                                               kBlockThreads, keys_bytes, a.stream>>>(
      static_cast<Row*>(a.tables->weights), a.opt->accumulators, a.tables->table_weights, a.opt->table_accumulators,
      a.sorted_keys, a.sorted_bags, a.segment_start, a.num_unique, a.chunks, a.chunk_start, a.partial,
      a.bags->offsets, a.tables->row_offsets, a.tables->mean_pooling, a.grad, a.grad_stride, a.bags->batch, dim, lanes,
      a.tables->total_rows, a.opt->scalars, a.opt->eps, a.opt->seed, a.opt->shard_origins, cached_keys);
  HETREC_GPU_CHECK_LAUNCH("sparse_update_kernel");
}

template <class Row, int VEC, int UNITS>
void dispatch_optimizer(const UpdateArgs& a, int lanes) {
  switch (a.opt->kind) {
    case SparseOptimizerKind::sgd: return launch_update<Row, VEC, UNITS, SparseOptimizerKind::sgd>(a, lanes);
    case SparseOptimizerKind::adagrad: return launch_update<Row, VEC, UNITS, SparseOptimizerKind::adagrad>(a, lanes);
    case SparseOptimizerKind::rowwise_adagrad:
      return launch_update<Row, VEC, UNITS, SparseOptimizerKind::rowwise_adagrad>(a, lanes);
  }
}

template <class Row, int VEC>
void dispatch_units(const UpdateArgs& a, const LaneLayout& layout) {
  switch (layout.units) {
    case 1: return dispatch_optimizer<Row, VEC, 1>(a, layout.lanes);
    case 2: return dispatch_optimizer<Row, VEC, 2>(a, layout.lanes);
    case 4: return dispatch_optimizer<Row, VEC, 4>(a, layout.lanes);
    case 8: return dispatch_optimizer<Row, VEC, 8>(a, layout.lanes);
    default: throw InternalError("embedding_bag_backward_update: unsupported units per lane");
  }
}

template <class Row>
void dispatch_vec(const UpdateArgs& a) {
  constexpr int kWideVec = 16 / sizeof(Row);
  const int dim = a.tables->dim;
  const bool wide = vector_path_ok(dim, kWideVec, a.tables->weights, sizeof(Row)) &&
                    vector_path_ok(dim, kWideVec, a.grad, sizeof(float)) && a.grad_stride % kWideVec == 0 &&
                    vector_path_ok(dim, kWideVec, a.partial, sizeof(float)) &&
                    (a.opt->kind != SparseOptimizerKind::adagrad ||
                     vector_path_ok(dim, kWideVec, a.opt->accumulators, sizeof(float)));
  if (wide) return dispatch_units<Row, kWideVec>(a, lane_layout(dim, kWideVec));
  return dispatch_units<Row, 1>(a, lane_layout(dim, 1));
}

struct Workspace {
  SortBuffers sort;
  uint32_t* segment_start;
  uint32_t* num_unique;
  uint32_t* num_chunks;
  uint32_t* owner;
  float* partial;
  int64_t max_chunks;
  void* scratch;
  std::size_t scratch_bytes;
};

// Chunks of long rows: each holds at least kLongSegment occurrences but its row's last,
// and only rows longer than kLongSegment have chunks, so there are fewer than
// 2 n / kLongSegment.
int64_t max_chunks_for(int64_t capacity) { return 2 * ceil_div<int64_t>(capacity, kLongSegment) + 1; }

std::size_t scratch_bytes_for(int64_t capacity) {
  const std::size_t sort = radix_sort_workspace_bytes(capacity);
  const std::size_t scan = exclusive_scan_workspace_bytes(capacity);
  return sort > scan ? sort : scan;
}

Workspace carve(void* base, int64_t capacity, int dim) {
  char* p = static_cast<char*>(base);
  const std::size_t array = aligned(static_cast<std::size_t>(capacity) * sizeof(uint32_t));
  Workspace w{};
  w.sort.keys = reinterpret_cast<uint32_t*>(p);
  w.sort.values = reinterpret_cast<uint32_t*>(p + array);
  w.sort.keys_alt = reinterpret_cast<uint32_t*>(p + 2 * array);
  w.sort.values_alt = reinterpret_cast<uint32_t*>(p + 3 * array);
  p += 4 * array;
  w.segment_start = reinterpret_cast<uint32_t*>(p);
  p += aligned(static_cast<std::size_t>(capacity + 1) * sizeof(uint32_t));
  w.num_unique = reinterpret_cast<uint32_t*>(p);
  w.num_chunks = w.num_unique + 1;
  p += kAlign;
  w.max_chunks = max_chunks_for(capacity);
  w.owner = reinterpret_cast<uint32_t*>(p);
  p += aligned(static_cast<std::size_t>(w.max_chunks) * sizeof(uint32_t));
  w.partial = reinterpret_cast<float*>(p);
  p += aligned(static_cast<std::size_t>(w.max_chunks) * static_cast<std::size_t>(dim) * sizeof(float));
  w.scratch = p;
  w.scratch_bytes = scratch_bytes_for(capacity);
  return w;
}

}  // namespace

std::size_t embedding_backward_workspace_bytes(int64_t max_ids, int dim) {
  const int64_t capacity = max_ids > 0 ? max_ids : 1;
  const std::size_t array = aligned(static_cast<std::size_t>(capacity) * sizeof(uint32_t));
  const auto chunks = static_cast<std::size_t>(max_chunks_for(capacity));
  return 4 * array + aligned(static_cast<std::size_t>(capacity + 1) * sizeof(uint32_t)) + kAlign +
         aligned(chunks * sizeof(uint32_t)) + aligned(chunks * static_cast<std::size_t>(dim) * sizeof(float)) +
         scratch_bytes_for(capacity);
}

void embedding_bag_backward_update(const EmbeddingTables& tables, const DeviceBags& bags, const float* grad_pooled,
                                   int64_t grad_row_stride, const SparseOptimizerParams& optimizer, void* workspace,
                                   std::size_t workspace_bytes, gpu::stream_t stream) {
  check_tables(tables, "embedding_bag_backward_update");
  if (bags.batch == 0 || tables.num_tables == 0 || bags.max_ids == 0) return;
  if (tables.total_rows >= static_cast<int64_t>(kInvalidKey))
    throw ConfigError("embedding tables of " + std::to_string(tables.total_rows) +
                      " rows in all exceed the GPU backward's 32-bit row keys (at most 4294967294 rows per device)");
  if (bags.max_ids > (int64_t{1} << 31) - 1)
    throw ConfigError("a batch of " + std::to_string(bags.max_ids) + " ids exceeds the 32-bit Batch offsets");
  if (!optimizer.scalars) throw InternalError("embedding_bag_backward_update: no step scalars");
  if (optimizer.kind != SparseOptimizerKind::sgd && !optimizer.accumulators && !optimizer.table_accumulators)
    throw InternalError("embedding_bag_backward_update: Adagrad needs accumulators");
  const std::size_t needed = embedding_backward_workspace_bytes(bags.max_ids, tables.dim);
  if (workspace_bytes < needed)
    throw InternalError("embedding_bag_backward_update: workspace of " + std::to_string(workspace_bytes) +
                        " bytes, need " + std::to_string(needed));

  const int64_t capacity = bags.max_ids;
  const int64_t num_bags = bags.batch * tables.num_tables;
  const int32_t* num_items = bags.offsets + num_bags;  // offsets[T * B]: the id count
  Workspace w = carve(workspace, capacity, tables.dim);

  build_sort_keys_kernel<<<grid_for(num_bags, kBlockThreads), kBlockThreads, 0, stream>>>(
      bags.offsets, bags.ids, tables.row_offsets, bags.batch, tables.num_tables, w.sort.keys, w.sort.values);
  HETREC_GPU_CHECK_LAUNCH("build_sort_keys_kernel");

  const int key_bits = std::bit_width(static_cast<uint64_t>(tables.total_rows));
  const bool in_primary = radix_sort_pairs(w.sort, num_items, capacity, key_bits, w.scratch, w.scratch_bytes, stream);
  const uint32_t* sorted_keys = in_primary ? w.sort.keys : w.sort.keys_alt;
  const uint32_t* sorted_bags = in_primary ? w.sort.values : w.sort.values_alt;
  // The ping-pong partner is free now: it holds the segment heads and their scan.
  uint32_t* heads = in_primary ? w.sort.keys_alt : w.sort.keys;
  uint32_t* unique_index = in_primary ? w.sort.values_alt : w.sort.values;

  mark_segment_heads_kernel<<<grid_for(capacity, kBlockThreads), kBlockThreads, 0, stream>>>(sorted_keys, num_items,
                                                                                            capacity, heads);
  HETREC_GPU_CHECK_LAUNCH("mark_segment_heads_kernel");
  exclusive_scan(heads, unique_index, capacity, w.num_unique, w.scratch, w.scratch_bytes, stream);
  segment_starts_kernel<<<grid_for(capacity, kBlockThreads), kBlockThreads, 0, stream>>>(
      heads, unique_index, num_items, w.num_unique, capacity, w.segment_start);
  HETREC_GPU_CHECK_LAUNCH("segment_starts_kernel");

  // Long rows are split into chunks; the heads and their scan are free again and hold
  // each row's chunk count and first chunk.
  uint32_t* chunks = heads;
  uint32_t* chunk_start = unique_index;
  count_chunks_kernel<<<grid_for(capacity, kBlockThreads), kBlockThreads, 0, stream>>>(w.segment_start, w.num_unique,
                                                                                      capacity, chunks);
  HETREC_GPU_CHECK_LAUNCH("count_chunks_kernel");
  exclusive_scan(chunks, chunk_start, capacity, w.num_chunks, w.scratch, w.scratch_bytes, stream);
  chunk_owner_kernel<<<grid_for(capacity, kBlockThreads), kBlockThreads, 0, stream>>>(chunks, chunk_start, w.num_unique,
                                                                                     capacity, w.owner);
  HETREC_GPU_CHECK_LAUNCH("chunk_owner_kernel");

  const UpdateArgs args{&tables,       &bags,           grad_pooled, grad_row_stride, &optimizer,
                        sorted_keys,   sorted_bags,     w.segment_start, w.num_unique, chunks,
                        chunk_start,   w.num_chunks,    w.owner,     w.partial,       w.max_chunks,
                        stream};
  switch (tables.row_dtype) {
    case DType::f32: return dispatch_vec<float>(args);
    case DType::f16: return dispatch_vec<F16Bits>(args);
    case DType::bf16: return dispatch_vec<Bf16Bits>(args);
    default: break;
  }
  throw InternalError("embedding_bag_backward_update: rows must be fp32, fp16 or bf16");
}

}  // namespace hetrec::kernels
