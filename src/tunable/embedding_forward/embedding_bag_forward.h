#pragma once
// Table-batched pooled embedding lookup: every bag of every table in one launch.
#include <cstdint>

#include "gpu/platform.h"
#include "kernels/embedding_types.h"

namespace hetrec::kernels {

// pooled(b, t, :) = sum (or mean, per table) of the rows of bag (t, b); an empty bag
// pools to zeros. Rows are read as fp32, fp16 or bf16 and accumulated in fp32 in bag
// order. An id outside [0, rows_t) contributes nothing and increments *bad_ids (when
// bad_ids is not null), so a bad id never reads out of bounds; a model points bad_ids at
// its step's skip flag (StepScalars::skip_update), so no update follows such a batch.
// With `tuned`, that variant (tunable/embedding_forward/embedding_forward_tuned.h) runs instead of the
// built-in one.
class TunedEmbeddingForward;
void embedding_bag_forward(const EmbeddingTables& tables, const DeviceBags& bags, const PooledView& out,
                           int32_t* bad_ids, gpu::stream_t stream, const TunedEmbeddingForward* tuned = nullptr);

}  // namespace hetrec::kernels
