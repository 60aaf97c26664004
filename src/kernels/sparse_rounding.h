#pragma once
// The random bits for stochastic rounding of 16-bit embedding rows after a sparse
// update, as the device draws them: core/seed_streams.h's functions, which the CPU
// backend uses too, so the two backends round alike.
#include <cstdint>

#include "core/seed_streams.h"
#include "gpu/platform.h"

namespace hetrec::kernels {

HETREC_HD inline uint64_t sparse_rounding_table_key(uint64_t seed, int64_t step, int table) {
  return seed_streams::rounding_table_key(seed, step, table);
}

HETREC_HD inline uint64_t sparse_rounding_row_key_of(uint64_t table_key, int64_t row) {
  return seed_streams::rounding_row_key(table_key, row);
}

HETREC_HD inline uint64_t sparse_rounding_row_key(uint64_t seed, int64_t step, int table, int64_t row) {
  return sparse_rounding_row_key_of(sparse_rounding_table_key(seed, step, table), row);
}

HETREC_HD inline uint32_t sparse_rounding_bits(uint64_t row_key, int element) {
  return seed_streams::rounding_bits(row_key, element);
}

// The bits of elements 2 pair (high half) and 2 pair + 1 (low half) in one draw.
HETREC_HD inline uint64_t sparse_rounding_pair_draw(uint64_t row_key, int pair) {
  return seed_streams::rounding_draw(row_key, pair);
}

}  // namespace hetrec::kernels
