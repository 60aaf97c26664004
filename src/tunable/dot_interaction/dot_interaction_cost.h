#pragma once
// The dot interaction's forward as a tuning problem: its variant space, the rules that
// prune a variant before it is compiled (shared memory per block, bank conflicts, idle
// threads), its floor and a prediction that orders the candidates.
#include <cstdint>
#include <string>

#include "hw/hardware.h"
#include "tunable/dot_interaction/dot_interaction_variant.h"
#include "tune/variant_space.h"
#include "tune/kernel_families.h"

namespace hetrec::tune {

inline constexpr const char* kDotForwardKernel = "dot_interaction_forward";

struct DotForwardWorkload {
  kernels::DotForwardShape shape;
  int64_t batch = 0;
  int pairs() const {
    const int f = shape.num_features;
    return shape.self ? f * (f + 1) / 2 : f * (f - 1) / 2;
  }
};

// block_threads, samples_per_block, row_pad.
VariantSpace dot_forward_space();
kernels::DotForwardVariant to_dot_variant(const ParameterSet& params);  // ConfigError when keys differ
ParameterSet dot_parameters(const kernels::DotForwardVariant& v);

// Bytes through HBM (features read, output written) and multiply-adds x 2.
double dot_forward_bytes(const DotForwardWorkload& w);
double dot_forward_flops(const DotForwardWorkload& w);
// The larger of the bytes at HBM bandwidth and the FLOPs at the fp32 (SIMT) rate, us.
double dot_forward_floor_us(const Hardware& hw, const DotForwardWorkload& w);

// Empty when worth compiling; otherwise why not.
std::string dot_forward_static_problem(const Hardware& hw, const DotForwardWorkload& w, const ParameterSet& params);

// The floor's terms and the shared-memory traffic (each pair product reads two staged rows)
// at the SMs' shared-memory bandwidth, whichever is largest, in us.
double dot_forward_predicted_us(const Hardware& hw, const DotForwardWorkload& w, const ParameterSet& params);
// Resident threads per SM the variant's shared memory and block size allow, as a
// fraction of the maximum: breaks ties (more is better).
double dot_forward_shared_occupancy(const Hardware& hw, const DotForwardWorkload& w, const ParameterSet& params);

// This folder's families in the one list of tunable families (tune/kernel_families.h).
void add_dot_interaction_families(std::vector<KernelFamily>& out);

}  // namespace hetrec::tune
