#pragma once
// The pooled embedding lookup kernel, on its own so that one source serves two
// compilers: nvcc builds the default instantiation into the engine
// (tunable/embedding_forward/embedding_bag_forward.cu), and NVRTC compiles any other instantiation at run
// time (tunable/embedding_forward/embedding_forward_tuned.h: the tuner's candidates and the tuned winner
// the engine loads). Every tunable knob is a template argument:
//   Row, Out        row and pooled element types (float, F16Bits, Bf16Bits)
//   VEC             elements per vector load (a 4-, 8- or 16-byte access of Row)
//   UNITS           vectors per lane (1, 2, 4, 8); lanes x UNITS x VEC covers the row
//   IDS_IN_FLIGHT   ids whose rows are requested before the first is accumulated
//   BLOCK_THREADS   threads per block (also the launch bound)
// The lane count per bag (threads per row, a power of two up to the warp width) is an
// argument.
#include <cstdint>

#include "kernels/row_vector.cuh"

namespace hetrec::kernels {

// One group of `lanes` consecutive threads pools one bag. Lane l handles the VEC-element
// vectors l, l + lanes, ... (UNITS of them) of the row.
template <class Row, class Out, int VEC, int UNITS, int IDS_IN_FLIGHT, int BLOCK_THREADS>
__global__ void __launch_bounds__(BLOCK_THREADS)
    embedding_bag_forward_kernel(const Row* __restrict__ weights, void* const* __restrict__ table_weights,
                                 const int64_t* __restrict__ row_offsets,
                                 const uint8_t* __restrict__ mean_pooling, const int32_t* __restrict__ offsets,
                                 const int32_t* __restrict__ ids, int64_t batch, int num_tables, int dim, int lanes,
                                 Out* __restrict__ out, int64_t out_stride, int32_t* bad_ids) {
  const int64_t thread = static_cast<int64_t>(blockIdx.x) * BLOCK_THREADS + threadIdx.x;
  const int64_t bag = thread / lanes;
  const int lane = static_cast<int>(thread % lanes);
  if (bag >= batch * num_tables) return;  // no warp collectives below: early exit is safe
  const int t = static_cast<int>(bag / batch);
  const int64_t b = bag - static_cast<int64_t>(t) * batch;
  const int32_t begin = offsets[bag];
  const int32_t end = offsets[bag + 1];
  const int64_t first_row = row_offsets[t];
  const int64_t rows = row_offsets[t + 1] - first_row;
  // Tables placed one by one (e.g. some in mapped host memory) come through table_weights.
  const Row* table = table_weights ? static_cast<const Row*>(table_weights[t]) : weights + first_row * dim;

  float acc[UNITS][VEC];
#pragma unroll
  for (int u = 0; u < UNITS; ++u)
#pragma unroll
    for (int i = 0; i < VEC; ++i) acc[u][i] = 0.0f;

  for (int32_t p = begin; p < end; p += IDS_IN_FLIGHT) {
    int64_t row[IDS_IN_FLIGHT];
#pragma unroll
    for (int k = 0; k < IDS_IN_FLIGHT; ++k) {
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
    float v[IDS_IN_FLIGHT][UNITS][VEC];
#pragma unroll
    for (int k = 0; k < IDS_IN_FLIGHT; ++k)
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
    for (int k = 0; k < IDS_IN_FLIGHT; ++k)
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

}  // namespace hetrec::kernels
