#pragma once
// The cross net's element-wise passes as tuning problems (tunable/cross_net/cross_net_kernel.cuh):
// their variant spaces, the rules that prune a variant before it is compiled, their
// floors (HBM bytes at the description's bandwidth) and a prediction that orders the
// candidates.
//
// Bytes per element of a batch x width layer, s the operand type's size (4 fp32, 2 bf16):
//   forward  reads x0 (4), x (4), z (s); writes out (4) and, in 16-bit mode, the operand
//            copy (s): 12 + s + 4 + (s in 16-bit mode) = 16 B (fp32), 16 B (bf16);
//   backward the bottom pass of a three-layer net (the one tuned: the heaviest pass of
//            tunable/cross_net/cross_backward_schedule.h for the MLPerf net), reads g (4),
//            two terms h (2s), x0 (4), three z's (3s); writes dz (s), dx0 (4):
//            12 + 6s = 36 B (fp32), 24 B (bf16); plus the bias gradient (4 B a column).
#include <cstdint>
#include <string>
#include <utility>

#include "hw/hardware.h"
#include "tunable/cross_net/cross_backward_schedule.h"
#include "tunable/cross_net/cross_net_variant.h"
#include "tune/variant_space.h"
#include "tune/kernel_families.h"

namespace hetrec::tune {

inline constexpr const char* kCrossForwardKernel = "cross_forward";
inline constexpr const char* kCrossBackwardKernel = "cross_backward";

struct CrossWorkload {
  kernels::CrossNetShape shape;
  int64_t batch = 0;
  int64_t elements() const { return batch * shape.width; }
};

// The backward pass the tuner times and prices: the bottom pass of a three-layer net.
kernels::CrossBackwardPass cross_backward_tuned_pass();

// vec, items, block_threads.
VariantSpace cross_forward_space();
kernels::CrossForwardVariant to_cross_forward_variant(const ParameterSet& params);  // ConfigError when keys differ
ParameterSet cross_forward_parameters(const kernels::CrossForwardVariant& v);
// vec, col_threads, row_groups, chunk_rows.
VariantSpace cross_backward_space();
kernels::CrossBackwardVariant to_cross_backward_variant(const ParameterSet& params);
ParameterSet cross_backward_parameters(const kernels::CrossBackwardVariant& v);

// Bytes through HBM (the header's counts), and the floors: those bytes at HBM bandwidth, us.
double cross_forward_bytes(const CrossWorkload& w);
double cross_backward_bytes(const CrossWorkload& w);
double cross_forward_floor_us(const Hardware& hw, const CrossWorkload& w);
double cross_backward_floor_us(const Hardware& hw, const CrossWorkload& w);

// Empty when worth compiling; otherwise why not ("<rule>: ...").
std::string cross_forward_static_problem(const Hardware& hw, const CrossWorkload& w, const ParameterSet& params);
std::string cross_backward_static_problem(const Hardware& hw, const CrossWorkload& w, const ParameterSet& params);

// (prediction, tie-break) in us, lower first: the bytes (the backward's chunk partials
// included) over the bandwidth the variant's loads in flight sustain (Little's law,
// capped at HBM's), or the memory instructions over the SMs' load/store issue rate,
// whichever is larger; ties broken by the issue time.
std::pair<double, double> cross_forward_rank(const Hardware& hw, const CrossWorkload& w, const ParameterSet& params);
std::pair<double, double> cross_backward_rank(const Hardware& hw, const CrossWorkload& w, const ParameterSet& params);

// This folder's families in the one list of tunable families (tune/kernel_families.h).
void add_cross_net_families(std::vector<KernelFamily>& out);

}  // namespace hetrec::tune
