#pragma once
// The analytical GEMM model: predicted time of one GEMM under one kernel configuration on
// one GPU, from the hardware description alone (docs/perf_model.md gives the equations).
//
// It is built in three steps so that the selector can reuse the first for every shape and
// bound the third cheaply:
//   gemm_kernel_traits   shape-independent facts of (GPU, precision, config): feasibility,
//                        CTAs per unit, time of one main-loop iteration and its bounds;
//   schedule_gemm        the shape's tiles, waves and per-unit time (+ a lower bound on
//                        the whole prediction that ignores cache reuse);
//   finish_gemm_estimate memory traffic with L2/LLC reuse under the rasterisation.
#include <cstdint>
#include <span>
#include <string>

#include "hw/hardware.h"
#include "gemm_perf/gemm_config.h"
#include "gemm_perf/gemm_model_params.h"
#include "gemm_perf/gemm_problem.h"

namespace hetrec::inline gemm_perf {

// ---- named constants (sources in the comments) ----
// fp32 accumulators may take at most half the register file: the rest holds operand
// fragments, addresses and producer warps. CUTLASS's largest Hopper tiles (128x256 and
// 256x128 with fp32 accumulation) sit exactly at this limit.
inline constexpr double kMaxAccumulatorRegisterShare = 0.5;
// Warpgroup-scope (Hopper warp-specialised) kernels move registers from the producer to the
// consumer warpgroups (setmaxnreg, PTX ISA), which then hold 160 of their 240 registers per
// thread as accumulators: 5/8 of the file. cuBLASLt's largest fp32-accumulator tile on the
// H200 (320x128 with two consumer warpgroups, 160 KB of the 256 KB file) sits exactly there.
inline constexpr double kMaxWarpSpecialisedAccumulatorRegisterShare = 0.625;
// Bytes of one fp32 accumulator / split-K partial element.
inline constexpr double kAccumulatorBytes = 4.0;
// Threads of Hopper's producer warpgroup (TMA loads) in warp-specialised kernels
// (CUTLASS sm90 kernels: one producer warpgroup of 128 threads).
inline constexpr int kHopperProducerThreads = 128;
// Warps that issue tcgen05 MMAs and TMA loads beside the epilogue warps (CUTLASS sm100
// kernels: one MMA warp and one load warp).
inline constexpr int kBlackwellControlWarps = 2;
// Four warps form a warpgroup (PTX ISA, wgmma).
inline constexpr int kWarpsPerWarpgroup = 4;
// Epilogue vector operations per output element: one conversion to the output type, plus
// one each for bias add, ReLU, the beta*C accumulate and the fp8 scale multiply.
inline constexpr double kEpilogueConvertOps = 1.0;
inline constexpr double kEpilogueBiasOps = 1.0;
inline constexpr double kEpilogueReluOps = 1.0;
inline constexpr double kEpilogueAccumulateOps = 1.0;
inline constexpr double kEpilogueScaleOps = 1.0;
// FLOPs per vector instruction lane in the datasheet fp32 rate (an FMA counts two).
inline constexpr double kFlopsPerFma = 2.0;
// Bytes of one fp8 scale factor (fp32).
inline constexpr double kScaleBytes = 4.0;
// Warps that issue on separate pipes of one unit: an NVIDIA SM has four processing blocks,
// each with its own warp scheduler and quarter of the math units (Hopper whitepaper), an
// AMD CU four SIMDs (CDNA 3 whitepaper). A warp issues on one of them, so warp-scope
// kernels reach the unit's full rate only with at least this many math warps resident.
inline constexpr int kIssueSlotsPerUnit = 4;
// A SIMT (fp32 FMA) thread computes a tm x tn fragment of its warp's tile and, per k step,
// issues tm x tn FMAs, its fragments' shared-memory loads as 128-bit vectors of
// kSimtFloatsPerLoad floats (CUTLASS SIMT sgemm), and about kSimtExtraIssuesPerK more
// instructions: its share of the next stage's global loads and shared stores, address
// arithmetic and the loop. They share the scheduler's one issue per clock with the FMAs, so
// the FMA pipe runs at fragment / (fragment + loads + extra) of its rate: small warp tiles
// are slower per FLOP. kSimtExtraIssuesPerK is an estimate; 4 gained on 9 of the 10
// cross-validation folds of the two H200 records, 8 on 7 and 3 on 5 (docs/perf_model.md).
inline constexpr double kSimtFloatsPerLoad = 4.0;
inline constexpr double kSimtExtraIssuesPerK = 4.0;

// The share of the FMA pipe's rate a SIMT kernel of this warp layout reaches (the
// constants above): 1 for the other kernels' layouts is the caller's business.
double simt_issue_share(const GemmConfig& c, int warp_size);

enum class GemmLimiter { math, shared_memory, l2, latency, dram, llc, overhead };
std::string_view limiter_name(GemmLimiter l);

// Shape-independent facts of one configuration for one precision on one GPU.
struct GemmKernelTraits {
  bool feasible = false;
  std::string infeasible_reason;  // empty when feasible
  MatrixPrecision precision = MatrixPrecision::bf16;  // the problem's precision
  // The pipe the kernel's instruction runs on: `precision`, except for SIMT kernels on other
  // operand types, which compute in fp32 on the vector pipes.
  MatrixPrecision pipe = MatrixPrecision::bf16;
  int instruction = -1;  // index into Hardware::matrix_instructions
  bool k_major_only = false;
  int pair = 1;  // CTAs one instruction spans (tcgen05 cta_group::2)
  double a_bytes = 0.0;
  double b_bytes = 0.0;
  int threads_per_cta = 0;
  double smem_bytes_per_cta = 0.0;
  double accumulator_bytes = 0.0;
  int ctas_per_unit = 0;
  // One main-loop iteration (tile_k of K for one CTA) on a busy unit, in microseconds:
  double iter_math_us = 0.0;     // matrix pipes at the sustained rate
  double iter_feed_us = 0.0;     // shared memory -> matrix units operand traffic
  double iter_l2_us = 0.0;       // L2 -> shared memory loads, all this unit receives
  double iter_latency_us = 0.0;  // load latency spread over the stages in flight
  double iter_us = 0.0;          // the max of the four
  double fill_us = 0.0;          // pipeline fill: the first stage's load latency
  double setup_us = 0.0;         // fixed start-up before the first load (async-copy kernels)
  // The previous generation's warp-level instruction on a GPU with a wider one for the
  // pipe (runs at GemmModelParams::legacy_instruction_efficiency).
  bool legacy_instruction = false;
  int math_warps = 0;            // warps issuing matrix instructions (or FMAs) per CTA
  bool warp_scope = false;       // each warp issues on its own (warp-scope instruction)
  bool simt = false;             // fp32 FMAs on the vector pipes (1 x 1 x 1 warp-scope instruction)
};

GemmKernelTraits gemm_kernel_traits(const Hardware& hw, const GemmModelParams& params,
                                    MatrixPrecision precision, const GemmConfig& config);

// The shape's schedule under one configuration.
struct GemmSchedule {
  int64_t tiles_m = 0;  // per batch element, rounded up to whole clusters
  int64_t tiles_n = 0;
  int64_t tiles = 0;       // tiles_m x tiles_n x batch
  int64_t k_iters = 0;     // main-loop iterations of the whole K
  int64_t slices = 1;      // effective split-K slices
  int64_t work_units = 0;  // CTAs launched (stream-K: persistent CTAs)
  int64_t iters_per_work = 0;
  double units_busy = 0.0;     // units with work
  double work_per_unit = 0.0;  // work items on the busiest unit (the wave count)
  double iters_on_busiest_unit = 0.0;
  // CTAs resident at once on the busiest unit (fewer than the occupancy limit when the grid
  // is small), and the share of the unit's issue slots their math warps fill.
  double resident_ctas = 0.0;
  double issue_share = 1.0;
  // One main-loop iteration with that residency: math and shared-memory feed slowed by the
  // issue share, load latency hidden by the resident CTAs only.
  double iter_math_us = 0.0;
  double iter_feed_us = 0.0;
  double iter_latency_us = 0.0;
  // L2 -> shared memory loads with the problem's operand alignment (gemm_narrow_load_factor).
  double iter_l2_us = 0.0;
  double iter_us = 0.0;
  double epilogue_us = 0.0;       // one tile's epilogue on its unit
  double tile_overhead_us = 0.0;  // exposed fill + epilogue summed on the busiest unit
  double fixup_us = 0.0;          // stream-K partial-tile fixups / in-place split-K turns on the busiest unit
  double unit_us = 0.0;           // busiest unit's total time
  double compulsory_bytes = 0.0;  // every input read once, every output written once
  double reduction_us = 0.0;      // split-K reduction kernel incl. its launch
  double transpose_us = 0.0;      // operand transposes for K-major-only instructions
  double padded_flops = 0.0;
  double lower_bound_us = 0.0;  // <= the finished prediction, for pruning
};

// Why a kernel with `traits` cannot load the problem's operands, or empty when it can:
// TMA-fed kernels (warpgroup and CTA-scope instructions) need rows aligned to
// kFullOperandAlignment bytes, the global strides a TMA descriptor accepts.
std::string gemm_alignment_block(const GemmProblem& problem, const GemmKernelTraits& traits);
// The widest copy of the library's kernels for operands whose rows are aligned to fewer
// than 16 bytes: one kernel serves both operands, and 8-byte-aligned rows run no faster
// than 4-byte-aligned ones (the H100's broad corpus, docs/perf_model.md), so such kernels
// copy 4 bytes at a time (cp.async's narrowest size, PTX ISA), or one 2-byte element.
inline constexpr int kNarrowCopyBytes = 4;
// How much longer an asynchronous-copy kernel (NVIDIA's warp-scope matrix instructions fed
// by cp.async) takes to move one iteration's A and B tiles from the L2 when an operand's
// rows are aligned to fewer than 16 bytes: every copy moves min(alignments,
// kNarrowCopyBytes) bytes instead of 16. 1 for aligned operands, for TMA-fed kernels
// (which cannot run them: gemm_alignment_block), for SIMT kernels, whose loads pass
// through registers anyway (the H100 corpus times fp32 SIMT GEMMs at 49-51 TFLOP/s either
// way), and on other vendors' GPUs (not measured).
double gemm_narrow_load_factor(const Hardware& hw, const GemmProblem& problem, const GemmKernelTraits& traits);

// Bytes every input read once and every output written once (the HBM floor).
double gemm_compulsory_bytes(const GemmProblem& problem, double a_bytes, double b_bytes);
// Bytes of one split-K partial in the workspace: fp32, or the output type when the
// configuration reduces in it.
double gemm_split_k_partial_bytes(const GemmProblem& problem, const GemmConfig& config);
// Achievable HBM bandwidth in bytes per microsecond.
double gemm_hbm_bytes_per_us(const Hardware& hw, const GemmModelParams& params);

GemmSchedule schedule_gemm(const Hardware& hw, const GemmModelParams& params, const GemmProblem& problem,
                           const GemmConfig& config, const GemmKernelTraits& traits);

struct GemmEstimate {
  double time_us = 0.0;  // predicted wall time incl. launches and any extra kernels
  double tflops = 0.0;   // useful 2*M*N*K*batch over time_us
  GemmLimiter limiter = GemmLimiter::math;
  // schedule
  int64_t tiles = 0;
  int64_t work_units = 0;
  double waves = 0.0;  // work items on the busiest unit
  int ctas_per_unit = 0;
  double padding_efficiency = 0.0;  // useful / padded FLOPs
  // time breakdown, microseconds; the main-loop bounds are totals on the busiest unit
  double unit_us = 0.0;
  double math_us = 0.0;
  double feed_us = 0.0;
  double l2_us = 0.0;
  double latency_us = 0.0;
  double tile_overhead_us = 0.0;
  double dram_us = 0.0;
  double llc_us = 0.0;
  double reduction_us = 0.0;
  double transpose_us = 0.0;
  double launch_us = 0.0;
  double setup_us = 0.0;  // the kernel's fixed start-up (GemmKernelTraits::setup_us)
  // traffic, bytes
  double dram_bytes = 0.0;
  double llc_bytes = 0.0;  // XCD L2s <- memory-side cache (AMD), 0 elsewhere
};

GemmEstimate finish_gemm_estimate(const Hardware& hw, const GemmModelParams& params,
                                  const GemmProblem& problem, const GemmConfig& config,
                                  const GemmKernelTraits& traits, const GemmSchedule& schedule);

// Predicted time of a kernel that may run as any of `config` and `alternatives` (choices
// it makes itself: its cluster, launch order or tile), as the fastest of those the GPU can
// run; NaN when it can run none. The problem is not validated (callers have done so).
double predict_best_of(const Hardware& hw, const GemmModelParams& params, const GemmProblem& problem,
                       const GemmConfig& config, std::span<const GemmConfig> alternatives);

// The whole model. Throws ConfigError when the problem is malformed or the configuration
// cannot run it on this GPU (the message says why).
GemmEstimate predict_gemm(const Hardware& hw, const GemmProblem& problem, const GemmConfig& config,
                          const GemmModelParams& params = GemmModelParams{});

}  // namespace hetrec::gemm_perf::gemm_perf
