#pragma once
// The small-GEMM kernels (tunable/small_gemm/small_gemm_kernel.cuh) as a tuning problem: the variant
// space of each kind, the rules that prune a variant before it is compiled, the floor and
// a prediction that orders the candidates.
//
// These GEMMs are bandwidth-bound: with one dimension d <= 16 a GEMM does 2 d FLOPs per
// element of its wide operand (4 bytes in fp32), at most 8 FLOPs per byte at d = 16 and
// 0.5 for the 1-wide layer, below the fp32 ridge of an H200 (67 TFLOP/s over 4.8 TB/s,
// about 14 FLOPs per byte). The floor is therefore the operands read and C written once
// at HBM bandwidth, or the FLOPs at the fp32 rate where that is larger.
#include <cstdint>
#include <string>
#include <vector>

#include "hw/hardware.h"
#include "tunable/small_gemm/small_gemm_variant.h"
#include "tune/variant_space.h"
#include "tune/kernel_families.h"

namespace hetrec::tune {

inline constexpr const char* kSmallGemmKernel = "small_gemm";

struct SmallGemmWorkload {
  kernels::SmallGemmShape shape;
  int64_t m = 0;  // the batch rows
};

enum class SmallGemmPass : uint8_t { forward, weight_gradient, input_gradient };

// One GEMM of an MLP layer that the small-GEMM kernels can run.
struct SmallGemmLayerGemm {
  std::string role;  // "bottom_mlp.0 forward" | "... weight gradient" | "... input gradient"
  int layer = 0;
  SmallGemmPass pass = SmallGemmPass::forward;
  kernels::SmallGemmShape shape;
};

// The GEMMs of a stack of Linear layers (in -> widths[0] -> ...; ReLU after every layer,
// or all but the last without relu_last) as model/gpu/gpu_mlp.cpp runs them, for every
// layer with in <= 16 or out <= 16 (the first rule that fits):
//   forward        Y = X W^T + b: out small -> rows (n = out, k = in, B^T);
//                                  in small -> outer (k = in, n = out, B^T)
//   weight grad.   dW = dZ^T X:   out small -> reduce (narrow dZ: C = narrow^T wide);
//                                  in small -> reduce (narrow X: C = wide^T narrow)
//   input grad.    dX = dZ W:     out small -> outer (k = out, n = in, B);
//                                  in small -> rows (n = in, k = out, B)
// The input gradient of layer 0 is listed only with input_gradient (the engine's bottom
// MLP has none: its input is the dense features).
std::vector<SmallGemmLayerGemm> small_gemm_mlp_gemms(const std::string& name, int in, const std::vector<int>& widths,
                                                     bool relu_last, bool input_gradient, DType operand);

// vec, lanes, rows_per_block, unroll, split; the knobs a kind does not use have the
// single value 1.
VariantSpace small_gemm_space(kernels::SmallGemmKind kind);
kernels::SmallGemmVariant to_small_gemm_variant(const ParameterSet& params);  // ConfigError when keys differ
ParameterSet small_gemm_parameters(const kernels::SmallGemmVariant& v);

// Bytes a thread of the variant has in flight from global memory (the outer kind: with the
// outputs its loads become, which it stores only once they return).
double small_gemm_bytes_in_flight_per_thread(const SmallGemmWorkload& w, const kernels::SmallGemmVariant& v);

// Bytes through HBM at least: A and B read once, C (and the bias) written or read once.
double small_gemm_bytes(const SmallGemmWorkload& w);
// 2 x multiply-adds.
double small_gemm_flops(const SmallGemmWorkload& w);
// FLOPs per byte of the floor's traffic.
double small_gemm_intensity(const SmallGemmWorkload& w);
// The larger of the bytes at HBM bandwidth and the FLOPs at the fp32 (SIMT) rate, us.
double small_gemm_floor_us(const Hardware& hw, const SmallGemmWorkload& w);

// Empty when worth compiling; otherwise why not: the variant cannot run the shape, its
// vectors or lanes overrun the wide dimension (idle lanes), or the reduce kind's partial
// sums would outweigh the rows it reads.
std::string small_gemm_static_problem(const Hardware& hw, const SmallGemmWorkload& w, const ParameterSet& params);
std::string small_gemm_static_problem(const Hardware& hw, const SmallGemmWorkload& w,
                                      const kernels::SmallGemmVariant& v);

// Predicted time (us): the staging of B (rows kind) and the second pass (reduce kind) plus
// the larger of (a) the traffic (the floor's plus the reduce kind's
// partial sums) over the bandwidth the variant's loads in flight sustain (Little's law,
// the lesser of that and HBM's) and (b) its memory instructions (global and shared) over
// the SMs' load/store issue rate and (c) the rows kind's shared-memory reads.
double small_gemm_predicted_us(const Hardware& hw, const SmallGemmWorkload& w, const ParameterSet& params);
double small_gemm_predicted_us(const Hardware& hw, const SmallGemmWorkload& w, const kernels::SmallGemmVariant& v);
// The rows kind's reads of the staged B at the shared-memory bandwidth (N fp32 values per
// element of A); 0 for the other kinds. With N = 13 this, not HBM, bounds the kernel.
double small_gemm_shared_read_us(const Hardware& hw, const SmallGemmWorkload& w);
// The rows kind's staging of B in shared memory at the start of each block (serial,
// before its first row); 0 for the other kinds.
double small_gemm_staging_us(const Hardware& hw, const SmallGemmWorkload& w, const kernels::SmallGemmVariant& v);
// The reduce kind's second pass (its chain of chunk additions per output); 0 otherwise.
double small_gemm_finish_us(const Hardware& hw, const SmallGemmWorkload& w, const kernels::SmallGemmVariant& v);
// Threads of the variant one unit keeps resident (block size, shared memory, the block
// limit; registers are known only after a compile).
double small_gemm_resident_threads_per_unit(const Hardware& hw, const SmallGemmWorkload& w,
                                            const kernels::SmallGemmVariant& v);
// Part (b) alone: breaks ties.
double small_gemm_issue_us(const Hardware& hw, const SmallGemmWorkload& w, const ParameterSet& params);
double small_gemm_issue_us(const Hardware& hw, const SmallGemmWorkload& w, const kernels::SmallGemmVariant& v);

// This folder's families in the one list of tunable families (tune/kernel_families.h).
void add_small_gemm_families(std::vector<KernelFamily>& out);

}  // namespace hetrec::tune
