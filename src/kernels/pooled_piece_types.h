#pragma once
// The piece descriptors the pooled-piece kernels read from device memory
// (kernels/pooled_pieces.h). Plain C++, so that the planner (plan/memory_model.cpp)
// counts the device lists of them with their real sizes.
#include <cstdint>

namespace hetrec::kernels {

// A piece's elements are fp32, or bf16 (an exchange in bf16, dist::ShardingPlan::
// exchange_dtype), widened exactly when read.
struct PooledPiece {
  const void* src = nullptr;  // device; sample b's piece starts at element b * src_stride
  int64_t src_stride = 0;     // elements
  int slot = 0;               // destination table slot t (columns slot*dim .. of a row)
  int col_begin = 0;          // first column within the slot
  int width = 0;              // columns
  int accumulate = 0;         // 0: write, 1: add to what earlier pieces of the slot wrote
  int src_bf16 = 0;           // 0: src holds floats, 1: bf16 bit patterns
};

struct PooledGradPiece {
  void* dst = nullptr;  // device; floats, or bf16 bit patterns when dst_bf16
  int64_t dst_stride = 0;
  int slot = 0;
  int col_begin = 0;
  int width = 0;
  int dst_bf16 = 0;  // 1: dst receives the values rounded to bf16 (nearest even)
};

}  // namespace hetrec::kernels
