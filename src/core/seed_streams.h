#pragma once
// The random streams a model draws from its seeds, shared by every backend so that the
// CPU and GPU engines initialise and round bit-identically. All functions are constexpr
// pure functions of their arguments (usable in device code: the device build passes
// --expt-relaxed-constexpr), built on core/mix64.h's mixer.
#include <cstdint>

#include "core/mix64.h"

namespace hetrec::seed_streams {

// Domains keep the streams of one seed apart (ASCII tags read as integers).
inline constexpr uint64_t kEmbeddingInitDomain = 0x696E6974ull;  // "init"
inline constexpr uint64_t kDenseInitDomain = 0x64656E7365ull;    // "dense"
inline constexpr uint64_t kRoundingDomain = 0x726F756E64ull;     // "round"

// Streams of the dense initialisation: one range per network, one stream per layer.
inline constexpr uint64_t kBottomMlpStreams = 0;
inline constexpr uint64_t kCrossNetStreams = uint64_t{1} << 16;
inline constexpr uint64_t kTopMlpStreams = uint64_t{2} << 16;

// Seed of the dense layers' initialisation.
constexpr uint64_t dense_init_seed(uint64_t init_seed) { return hash_combine(init_seed, kDenseInitDomain); }

// Key of table t's row initialisation; row r of it draws from the counter key + r.
constexpr uint64_t embedding_init_table_key(uint64_t init_seed, uint64_t table) {
  return hash_combine(hash_combine(init_seed, kEmbeddingInitDomain), table);
}

// Stochastic rounding of 16-bit rows after a sparse update: one key per (seed, step,
// table), from it one per row; element 2k takes the high and element 2k + 1 the low half
// of the draw mix64(row_key + k).
constexpr uint64_t rounding_table_key(uint64_t seed, int64_t step, int table) {
  const uint64_t step_key = hash_combine(hash_combine(seed, kRoundingDomain), static_cast<uint64_t>(step));
  return hash_combine(step_key, static_cast<uint64_t>(table));
}
constexpr uint64_t rounding_row_key(uint64_t table_key, int64_t row) {
  return hash_combine(table_key, static_cast<uint64_t>(row));
}
// The draw of elements 2 pair and 2 pair + 1.
constexpr uint64_t rounding_draw(uint64_t row_key, int pair) { return mix64(row_key + static_cast<uint64_t>(pair)); }
constexpr uint32_t rounding_bits(uint64_t row_key, int element) {
  const uint64_t draw = rounding_draw(row_key, element >> 1);
  return (element & 1) ? static_cast<uint32_t>(draw) : static_cast<uint32_t>(draw >> 32);
}

}  // namespace hetrec::seed_streams
