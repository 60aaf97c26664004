#pragma once
// The embedding backward's fused sparse update as a tuning problem: its variant space,
// the rules that prune a variant before it is compiled (shape, coalescing, idle lanes,
// launch bound), its bandwidth floor and a latency-bandwidth-issue prediction that
// orders the candidates.
#include <cstdint>
#include <string>

#include "hw/hardware.h"
#include "tunable/sparse_update/sparse_update_variant.h"
#include "tune/variant_space.h"
#include "tune/kernel_families.h"

namespace hetrec::tune {

inline constexpr const char* kSparseUpdateKernel = "embedding_sparse_update";

// One batch's update, after the preparation (sort, segments, chunk sums of long rows).
struct SparseUpdateWorkload {
  kernels::SparseUpdateShape shape;
  int64_t batch = 0;
  int num_tables = 0;
  int64_t total_ids = 0;           // valid occurrences (ids inside their table)
  int64_t unique_rows = 0;         // distinct rows among them: each is read and written once
  int64_t short_occurrences = 0;   // occurrences of rows the update sums whole (kernels/long_rows.h)
  int64_t long_row_chunks = 0;     // chunk sums of the long rows, which the update adds instead
};

// vec_bytes, lanes (threads per row), grads_in_flight, block_threads, min_blocks_per_sm.
VariantSpace sparse_update_space();

// Throws ConfigError naming the missing or extra parameter.
kernels::SparseUpdateVariant to_sparse_update_variant(const ParameterSet& params);
// The variant's parameters with the lane count resolved for `shape` (never 0).
ParameterSet sparse_update_parameters(const kernels::SparseUpdateVariant& v, const kernels::SparseUpdateShape& shape,
                                      int warp_size);

// Optimizer state bytes per row: 0 (SGD), 4 (row-wise Adagrad), dim x 4 (Adagrad).
double sparse_update_state_bytes(const kernels::SparseUpdateShape& s);
// Bytes the update must move through HBM at least: every touched row and its optimizer
// state read and written once; every occurrence of a short row its pooled gradient
// (dim floats) and its bag (4 bytes) read, every chunk sum of a long row read; per
// unique row its key, segment start and chunk count (12 bytes) read.
double sparse_update_bytes(const SparseUpdateWorkload& w);
// Those bytes at the description's HBM bandwidth, in microseconds.
double sparse_update_floor_us(const Hardware& hw, const SparseUpdateWorkload& w);

// Empty when the variant is worth compiling; otherwise why not: it cannot run the
// shape, a lane group reads less than one 32-byte sector of a row per access, lanes of
// a group have no part of the row, or the launch bound asks for more resident threads
// than an SM holds.
std::string sparse_update_static_problem(const Hardware& hw, const SparseUpdateWorkload& w,
                                         const ParameterSet& params);

// Predicted time (us): the larger of (a) the floor's bytes over the bandwidth the
// variant can sustain, the lesser of HBM's and what its resident gradient loads in
// flight deliver over one memory latency (Little's law; resident threads from the launch
// bound), and (b) its vector memory instructions over the SMs' load/store issue rate.
double sparse_update_predicted_us(const Hardware& hw, const SparseUpdateWorkload& w, const ParameterSet& params);
// Part (b) alone; it breaks ties.
double sparse_update_issue_us(const Hardware& hw, const SparseUpdateWorkload& w, const ParameterSet& params);

// This folder's families in the one list of tunable families (tune/kernel_families.h).
void add_sparse_update_families(std::vector<KernelFamily>& out);

}  // namespace hetrec::tune
