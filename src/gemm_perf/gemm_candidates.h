#pragma once
// The kernel configurations worth ranking for a GPU and precision, shaped after the tile
// families of the vendors' libraries:
//   Hopper (warpgroup wgmma): CUTLASS-sm90-like tiles 64/128/256 x 64..256, K = 128 bytes,
//     2-7 stages, clusters 1x1/2x1/1x2;
//   Blackwell (CTA-wide tcgen05): 128 x 64..256 per CTA, alone or as a CTA pair (256-row
//     instruction), clusters up to 4;
//   CDNA (wavefront MFMA): hipBLASLt-like macro tiles 32..256 squared, depth 64/128 bytes,
//     2-3 LDS stages, with or without the XCD remapping of workgroups;
//   NVIDIA fp32 without TF32 (SIMT FMA): CUTLASS-SIMT-like 64/128 tiles.
// Every family is crossed with the K decompositions (data parallel, split-K 2..16,
// stream-K) and launch orders (along M or N, swizzle 1 or 8). Only configurations that fit
// the GPU are returned; deeper pipelines come before shallower ones of the same kernel.
#include <vector>

#include "hw/hardware.h"
#include "gemm_perf/gemm_config.h"

namespace hetrec::inline gemm_perf {

std::vector<GemmConfig> gemm_candidates(const Hardware& hw, MatrixPrecision precision);

// The kernels for operands whose rows TMA cannot load (GemmProblem::a_alignment below 16
// bytes) on a GPU whose candidates above are TMA-fed (Hopper, Blackwell) but which still
// issues the Ampere generation's mma.sync for the precision: the CUTLASS-sm80-like tiles
// fed by cp.async, the kind of kernel the library runs for such operands (its heuristic's
// pick has a fixed stage count, not a TMA kernel's "K x AUTO", on 361 of the 363 unaligned
// 16-bit and TF32 shapes of the H100's broad corpus and on all 78 of the H200's 20261130d
// corpus). Empty elsewhere: there the candidates above load any alignment.
std::vector<GemmConfig> gemm_unaligned_candidates(const Hardware& hw, MatrixPrecision precision);

}  // namespace hetrec::gemm_perf::gemm_perf
