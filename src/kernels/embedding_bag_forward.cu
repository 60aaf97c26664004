#include "kernels/embedding_bag_forward.h"

#include <string>

#include "core/error.h"
#include "gpu/check.h"
#include "kernels/embedding_lanes.h"
#include "kernels/launch.h"
#include "kernels/row_vector.cuh"

namespace hetrec::kernels {

namespace {

constexpr int kBlockThreads = 256;
// Ids whose rows are requested together before the first is accumulated: four
// independent 16-byte loads in flight per lane hide most of the HBM latency.
constexpr int kIdsInFlight = 4;

// One group of `lanes` consecutive threads pools one bag. Lane l handles the VEC-element
// vectors l, l + lanes, ... (UNITS of them) of the row.
template <class Row, class Out, int VEC, int UNITS>
__global__ void __launch_bounds__(kBlockThreads)
    embedding_bag_forward_kernel(const Row* __restrict__ weights, void* const* __restrict__ table_weights,
                                 const int64_t* __restrict__ row_offsets,
                                 const uint8_t* __restrict__ mean_pooling, const int32_t* __restrict__ offsets,
                                 const int32_t* __restrict__ ids, int64_t batch, int num_tables, int dim, int lanes,
                                 Out* __restrict__ out, int64_t out_stride, int32_t* bad_ids) {
  const int64_t thread = static_cast<int64_t>(blockIdx.x) * kBlockThreads + threadIdx.x;
  const int64_t bag = thread / lanes;
  const int lane = static_cast<int>(thread % lanes);
  if (bag >= batch * num_tables) return;  // no warp collectives below: early exit is safe
  const int t = static_cast<int>(bag / batch);
  const int64_t b = bag - static_cast<int64_t>(t) * batch;
  const int32_t begin = offsets[bag];
  const int32_t end = offsets[bag + 1];
  const int64_t first_row = row_offsets[t];
  const int64_t rows = row_offsets[t + 1] - first_row;
  const Row* table = table_weights ? static_cast<const Row*>(table_weights[t]) : weights + first_row * dim;

  float acc[UNITS][VEC];
#pragma unroll
  for (int u = 0; u < UNITS; ++u)
#pragma unroll
    for (int i = 0; i < VEC; ++i) acc[u][i] = 0.0f;

  for (int32_t p = begin; p < end; p += kIdsInFlight) {
    int64_t row[kIdsInFlight];
#pragma unroll
    for (int k = 0; k < kIdsInFlight; ++k) {
      row[k] = -1;
      if (p + k < end) {
        const int32_t id = ids[p + k];
        if (id >= 0 && id < rows) {
          row[k] = id;
        } else if (lane == 0 && bad_ids) {
          atomicAdd(bad_ids, 1);
        }
      }
    }
    float v[kIdsInFlight][UNITS][VEC];
#pragma unroll
    for (int k = 0; k < kIdsInFlight; ++k)
#pragma unroll
      for (int u = 0; u < UNITS; ++u) {
        const int e = (lane + u * lanes) * VEC;
        if (row[k] >= 0 && e < dim) {
          load_vec<VEC>(table + row[k] * dim + e, v[k][u]);
        } else {
#pragma unroll
          for (int i = 0; i < VEC; ++i) v[k][u][i] = 0.0f;
        }
      }
    // Accumulate in bag order, so the sum is the same for any launch configuration.
#pragma unroll
    for (int k = 0; k < kIdsInFlight; ++k)
#pragma unroll
      for (int u = 0; u < UNITS; ++u)
#pragma unroll
        for (int i = 0; i < VEC; ++i) acc[u][i] += v[k][u][i];
  }

  const int32_t count = end - begin;
  if (mean_pooling[t] && count > 0) {
    const float inv_len = 1.0f / static_cast<float>(count);  // as the CPU collection scales
#pragma unroll
    for (int u = 0; u < UNITS; ++u)
#pragma unroll
      for (int i = 0; i < VEC; ++i) acc[u][i] *= inv_len;
  }
  Out* dst = out + b * out_stride + static_cast<int64_t>(t) * dim;
#pragma unroll
  for (int u = 0; u < UNITS; ++u) {
    const int e = (lane + u * lanes) * VEC;
    if (e < dim) store_vec<VEC>(dst + e, acc[u]);
  }
}

template <class Row, class Out, int VEC, int UNITS>
void launch_forward(const EmbeddingTables& tables, const DeviceBags& bags, const PooledView& out, int lanes,
                    int32_t* bad_ids, gpu::stream_t stream) {
  const int64_t threads = bags.batch * tables.num_tables * lanes;
  embedding_bag_forward_kernel<Row, Out, VEC, UNITS><<<grid_for(threads, kBlockThreads), kBlockThreads, 0, stream>>>(
      static_cast<const Row*>(tables.weights), tables.table_weights, tables.row_offsets, tables.mean_pooling, bags.offsets, bags.ids,
      bags.batch, tables.num_tables, tables.dim, lanes, static_cast<Out*>(out.data), out.row_stride, bad_ids);
  HETREC_GPU_CHECK_LAUNCH("embedding_bag_forward_kernel");
}

template <class Row, class Out, int VEC>
void dispatch_units(const EmbeddingTables& tables, const DeviceBags& bags, const PooledView& out,
                    const LaneLayout& layout, int32_t* bad_ids, gpu::stream_t stream) {
  switch (layout.units) {
    case 1: return launch_forward<Row, Out, VEC, 1>(tables, bags, out, layout.lanes, bad_ids, stream);
    case 2: return launch_forward<Row, Out, VEC, 2>(tables, bags, out, layout.lanes, bad_ids, stream);
    case 4: return launch_forward<Row, Out, VEC, 4>(tables, bags, out, layout.lanes, bad_ids, stream);
    case 8: return launch_forward<Row, Out, VEC, 8>(tables, bags, out, layout.lanes, bad_ids, stream);
    default: throw InternalError("embedding_bag_forward: unsupported units per lane " + std::to_string(layout.units));
  }
}

template <class Row, class Out>
void dispatch_vec(const EmbeddingTables& tables, const DeviceBags& bags, const PooledView& out, int32_t* bad_ids,
                  gpu::stream_t stream) {
  constexpr int kWideVec = 16 / sizeof(Row);  // elements per 16-byte load
  const bool wide = vector_path_ok(tables.dim, kWideVec, tables.weights, sizeof(Row)) &&
                    vector_path_ok(tables.dim, kWideVec, out.data, sizeof(Out)) &&
                    out.row_stride % kWideVec == 0;
  if (wide) return dispatch_units<Row, Out, kWideVec>(tables, bags, out, lane_layout(tables.dim, kWideVec), bad_ids, stream);
  return dispatch_units<Row, Out, 1>(tables, bags, out, lane_layout(tables.dim, 1), bad_ids, stream);
}

template <class Row>
void dispatch_out(const EmbeddingTables& tables, const DeviceBags& bags, const PooledView& out, int32_t* bad_ids,
                  gpu::stream_t stream) {
  switch (out.dtype) {
    case DType::f32: return dispatch_vec<Row, float>(tables, bags, out, bad_ids, stream);
    case DType::bf16: return dispatch_vec<Row, Bf16Bits>(tables, bags, out, bad_ids, stream);
    default:
      throw InternalError("embedding_bag_forward: pooled output must be fp32 or bf16, got " +
                          std::string(dtype_name(out.dtype)));
  }
}

}  // namespace

void embedding_bag_forward(const EmbeddingTables& tables, const DeviceBags& bags, const PooledView& out,
                           int32_t* bad_ids, gpu::stream_t stream) {
  check_tables(tables, "embedding_bag_forward");
  if (bags.batch == 0 || tables.num_tables == 0) return;
  switch (tables.row_dtype) {
    case DType::f32: return dispatch_out<float>(tables, bags, out, bad_ids, stream);
    case DType::f16: return dispatch_out<F16Bits>(tables, bags, out, bad_ids, stream);
    case DType::bf16: return dispatch_out<Bf16Bits>(tables, bags, out, bad_ids, stream);
    default: break;
  }
  throw InternalError("embedding_bag_forward: rows must be fp32, fp16 or bf16");
}

}  // namespace hetrec::kernels
