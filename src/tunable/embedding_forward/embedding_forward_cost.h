#pragma once
// The pooled embedding lookup as a tuning problem: its variant space, the rules that
// prune a variant before it is compiled (shape, coalescing, idle lanes), its bandwidth
// floor and a latency-bandwidth prediction that orders the candidates.
#include <cstdint>
#include <string>

#include "hw/hardware.h"
#include "tunable/embedding_forward/embedding_forward_variant.h"
#include "tune/variant_space.h"
#include "tune/kernel_families.h"

namespace hetrec::tune {

inline constexpr const char* kEmbeddingForwardKernel = "embedding_bag_forward";

// One batch of the lookup: `total_ids` ids over batch x num_tables bags.
struct EmbeddingForwardWorkload {
  kernels::EmbeddingForwardShape shape;
  int64_t batch = 0;
  int num_tables = 0;
  int64_t total_ids = 0;
  // Distinct rows among the ids (0: unknown, every id counts as a row read). A row that
  // repeats within the batch need be read from HBM only once.
  int64_t unique_rows = 0;
};

// vec_bytes, lanes (threads per bag), ids_in_flight, block_threads.
VariantSpace embedding_forward_space();

// Throws ConfigError naming the missing or extra parameter.
kernels::EmbeddingForwardVariant to_forward_variant(const ParameterSet& params);
// The variant's parameters with the lane count resolved for `shape` (never 0).
ParameterSet forward_parameters(const kernels::EmbeddingForwardVariant& v, const kernels::EmbeddingForwardShape& shape,
                                int warp_size);

// Bytes the lookup must move through HBM at least: every distinct row read once, the
// ids and bag offsets read, the pooled output written.
double embedding_forward_bytes(const EmbeddingForwardWorkload& w);
// Those bytes at the description's HBM bandwidth, in microseconds.
double embedding_forward_floor_us(const Hardware& hw, const EmbeddingForwardWorkload& w);

// Empty when the variant is worth compiling; otherwise why not: it cannot run the
// shape, a lane group reads less than one 32-byte sector of a row per access, or lanes
// of a group have no part of the row.
std::string embedding_forward_static_problem(const Hardware& hw, const EmbeddingForwardWorkload& w,
                                             const ParameterSet& params);

// Predicted time (us): the larger of (a) the floor's bytes over the bandwidth the variant
// can sustain, the lesser of HBM's and what its resident loads in flight deliver over one
// memory latency (Little's law), and (b) its load instructions over the SMs' load/store
// issue rate. `occupancy` is resident threads / the SM maximum (1 before the resource
// report is known).
double embedding_forward_predicted_us(const Hardware& hw, const EmbeddingForwardWorkload& w, const ParameterSet& params,
                                      double occupancy);
// Part (b) alone: the time to issue the variant's row loads (us); it breaks ties between
// variants that the bandwidth terms cannot tell apart.
double embedding_forward_issue_us(const Hardware& hw, const EmbeddingForwardWorkload& w, const ParameterSet& params);

// This folder's families in the one list of tunable families (tune/kernel_families.h).
void add_embedding_forward_families(std::vector<KernelFamily>& out);

}  // namespace hetrec::tune
