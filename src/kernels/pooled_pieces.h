#pragma once
// Pieces of pooled embeddings between the exchange buffers of distributed training and
// the feature matrix X (batch x slots x dim, a row per sample, at a row stride).
//
// After the pooled all-to-all, slot t of X (model table t) arrives in pieces: one whole
// piece (table_wise, replicated), a column block from each rank (column_wise), or a
// partial sum of all rows from each rank (row_wise: the pieces add up). gather writes
// them into X; scatter is its transpose for the backward, copying each piece's columns
// of the feature gradient into its own send buffer.
#include <cstdint>

#include "gpu/platform.h"
#include "kernels/pooled_piece_types.h"  // PooledPiece, PooledGradPiece

namespace hetrec::kernels {

// For every sample b < batch and piece p (pieces sorted by slot; slot_begin[t] ..
// slot_begin[t+1] are slot t's pieces, both arrays device memory, num_slots + 1 entries
// in slot_begin):
//   x[b*x_stride + p.slot*dim + p.col_begin + e] (= or +=) p.src[b*p.src_stride + e], e < width,
// (the source widened to fp32 first when it is bf16)
// applied in list order within a slot (deterministic; a row_wise table's partial sums
// from several ranks add in rank order). An accumulating piece that is the first to
// reach a column adds to what x held. Columns no piece covers are left as they are.
// Each element of x is read (if needed) and written once: the pieces of its slot are
// folded in a register.
void gather_pooled_pieces(const PooledPiece* pieces, const int* slot_begin, int num_slots, int64_t batch, float* x,
                          int64_t x_stride, int dim, gpu::stream_t stream);

// The transpose: dst[b*dst_stride + e] = g[b*g_stride + slot*dim + col_begin + e] for
// every piece (pieces: device memory, num_pieces entries, in any order; their
// destinations must not overlap), rounded to bf16 for a dst_bf16 piece.
void scatter_pooled_grads(const PooledGradPiece* pieces, int num_pieces, int64_t batch, const float* g,
                          int64_t g_stride, int dim, gpu::stream_t stream);

}  // namespace hetrec::kernels
