#pragma once
// The dot interaction's backward as a tuning problem: its variant space, the rules that
// prune a variant before it is compiled (shared memory per block, bank conflicts, idle
// threads), its floor and a prediction that orders the candidates.
#include <cstdint>
#include <string>

#include "hw/hardware.h"
#include "tunable/dot_interaction/dot_interaction_backward_variant.h"
#include "tunable/dot_interaction/dot_interaction_cost.h"
#include "tune/variant_space.h"

namespace hetrec::tune {

inline constexpr const char* kDotBackwardKernel = "dot_interaction_backward";

// The workload is the forward's: F feature vectors of width D per sample, `batch` samples.
using DotBackwardWorkload = DotForwardWorkload;

// block_threads, samples_per_block, row_pad, rows_per_thread.
VariantSpace dot_backward_space();
kernels::DotBackwardVariant to_dot_backward_variant(const ParameterSet& params);  // ConfigError when keys differ
ParameterSet dot_backward_parameters(const kernels::DotBackwardVariant& v);

// Bytes through HBM (features and dout read, dfeatures written) and the multiply-adds
// x 2 (each pair's gradient scales both of its rows: 2 P D multiply-adds a sample).
double dot_backward_bytes(const DotBackwardWorkload& w);
double dot_backward_flops(const DotBackwardWorkload& w);
// The larger of the bytes at HBM bandwidth and the FLOPs at the fp32 (SIMT) rate, us.
double dot_backward_floor_us(const Hardware& hw, const DotBackwardWorkload& w);

// Empty when worth compiling; otherwise why not.
std::string dot_backward_static_problem(const Hardware& hw, const DotBackwardWorkload& w, const ParameterSet& params);

// Clocks of shared memory one sample keeps busy: every warp-wide access occupies it for
// one clock (a full-width read of a staged feature row, and just as long a broadcast
// read of one pair gradient), for staging the features, zeroing and filling the
// pair-gradient matrix, and per summed feature j one feature read plus one pair-gradient
// read per accumulated row.
double dot_backward_shared_clocks_per_sample(const Hardware& hw, const DotBackwardWorkload& w,
                                             const ParameterSet& params);
// The floor's terms and the shared-memory clocks over the SMs, whichever is largest, us.
double dot_backward_predicted_us(const Hardware& hw, const DotBackwardWorkload& w, const ParameterSet& params);
// Resident threads per SM the variant's shared memory and block size allow, as a
// fraction of the maximum: breaks ties (more is better).
double dot_backward_shared_occupancy(const Hardware& hw, const DotBackwardWorkload& w, const ParameterSet& params);

}  // namespace hetrec::tune
