#pragma once
// The sparse optimizer's kind and a shard's place in its full table: what the fused
// embedding update kernel (tunable/sparse_update/sparse_update_kernel.cuh) takes besides pointers. No
// standard library beyond <cstdint>, so that the kernel also compiles at run time.
#include <cstdint>

namespace hetrec::kernels {

enum class SparseOptimizerKind { sgd, adagrad, rowwise_adagrad };

// Where table t of the device's tables sits in a full model table when it holds a shard
// (nn/embedding_collection.h's TableOrigin): its local row r is row r + row_offset of
// model table `table`, its element e is element e + col_offset (even, so the rounding
// draws, two elements each, stay paired).
struct ShardOrigin {
  int table = 0;
  int col_offset = 0;
  int64_t row_offset = 0;
};

}  // namespace hetrec::kernels
