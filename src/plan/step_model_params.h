#pragma once
// The per-architecture efficiency factors of the step-time model: the numbers that are
// not datasheet facts and that calibrate_step_model (plan/calibration.h) fits to measured
// steps. Each bandwidth factor is the share of the datasheet rate a kind of work reaches;
// the GEMM factor scales the GEMM model's own prediction; the two overheads are times.
#include <array>
#include <string>
#include <string_view>

#include "hw/hardware.h"

namespace hetrec::inline plan {

enum class StepFactor {
  // GEMM time = GEMM model time (gemm_perf/, without its launch) / factor, one factor per pipe
  // the GEMM runs on: SIMT fp32, TF32, 16-bit (bf16 and fp16).
  gemm_fp32,
  gemm_tf32,
  gemm_16bit,
  elementwise,         // element-wise passes: bytes / (HBM rate x elementwise)
  // The cross net's passes over its batch x width tensors, bytes / (HBM rate x factor):
  // forward, x_{l+1} = x0 * z + x_l (either residual stream) and X's 16-bit copy, wide
  // streaming passes; backward (tunable/cross_net/cross_backward_schedule.h), each reading
  // and writing several tensors per element and summing the bias gradient across rows.
  // Rates of their own, unlike the narrow MLP passes `elementwise` prices.
  cross_forward,
  cross_backward,
  interaction,         // DLRM dot interaction kernels: bytes / (HBM rate x interaction)
  embedding_forward,   // pooled lookup: bytes / (HBM rate x embedding_forward)
  embedding_backward,  // sort + fused update: bytes / (HBM rate x embedding_backward)
  upload,              // batch pack and copy: bytes / (host link rate x upload)
  host_tables,         // table rows crossing the host link: bytes / (host link rate x host_tables)
  kernel_overhead_us,  // time added per kernel launch (graph node)
  step_overhead_us,    // host time per step outside the kernels (checks, sync)
  // Microseconds per million values the device rounds to fp16 (gpu/half.h f16_encode:
  // the rounding runs in double precision so that host and device agree bit for bit, which
  // makes the pass compute-bound on the FP64 pipe rather than bandwidth-bound).
  fp16_rounding_us,
  // Microseconds per million distinct rows the fused embedding update writes: its per-row
  // work (the row's key and table, the row-wise Adagrad reduction, the stochastic
  // rounding keys) is bound by instruction issue and dependent loads, not by the bytes
  // the embedding_backward factor prices.
  embedding_row_update_us,
  // Microseconds per million row reads of the pooled lookup (every id's, duplicates
  // included): each read is a dependent gather whose issue and address translation cost per
  // row, not per byte, which the embedding_forward factor alone cannot tell from bandwidth.
  embedding_row_read_us,
  // Several GPUs: collectives between them (plan/comm_model.h), split as CollectiveCost:
  // bytes on the busiest rank's link / (peer link rate x peer_link), plus one
  // collective_latency_us per algorithm step.
  peer_link,
  collective_latency_us,
};
inline constexpr std::size_t kStepFactorCount = 18;
inline constexpr StepFactor kAllStepFactors[kStepFactorCount] = {
    StepFactor::gemm_fp32,          StepFactor::gemm_tf32,         StepFactor::gemm_16bit,
    StepFactor::elementwise,        StepFactor::cross_forward,     StepFactor::cross_backward,
    StepFactor::interaction,        StepFactor::embedding_forward,
    StepFactor::embedding_backward, StepFactor::upload,            StepFactor::host_tables,
    StepFactor::kernel_overhead_us, StepFactor::step_overhead_us, StepFactor::fp16_rounding_us,
    StepFactor::embedding_row_update_us, StepFactor::embedding_row_read_us,
    StepFactor::peer_link,          StepFactor::collective_latency_us};

std::string_view step_factor_name(StepFactor f);
// Overheads and the fp16 rounding multiply a count; every other factor divides a time at
// the full rate.
bool step_factor_is_overhead(StepFactor f);

// ---- generic starting values (before calibration) ----
// Trust the GEMM model, which carries its own per-architecture efficiencies (hw/params).
inline constexpr double kDefaultGemmFactor = 1.0;
// Streaming kernels: `hetrec hw probe` measured a 4.26 TB/s device copy on the 4.8 TB/s H200
// (bench/results/probe-20261130-h200.json).
inline constexpr double kDefaultStreamEfficiency = 0.896;
// Pinned host-to-device copies reach about 80% of a PCIe link's per-direction rate
// (CUDA bandwidthTest on Gen4 x16: about 25 of 32 GB/s). Estimate for Gen5.
inline constexpr double kDefaultUploadEfficiency = 0.8;
// GPU reads of 256-512 B rows scattered over page-locked host memory: about half the
// link rate. Estimate; no measurement yet.
inline constexpr double kDefaultHostTableEfficiency = 0.5;
// Gap a kernel adds in a stream (the GEMM model's launch_overhead_us for sm_90).
inline constexpr double kDefaultKernelOverheadUs = 2.0;
// Host work per step besides the upload: batch checks, graph launch, the final sync.
// Estimate.
inline constexpr double kDefaultStepOverheadUs = 100.0;
// fp16 rounding (gpu/half.h f16_encode): about 100 FP64 operations per value (frexp, three
// ldexp, a division and rint are software sequences on the FP64 pipe) at the H100/H200
// datasheet's 34 TFLOP/s FP64 (vector): about 3 us per million values. Estimate; the H200
// fit is in docs/planner.md.
inline constexpr double kDefaultFp16RoundingUs = 3.0;
// The fused embedding update on the H200 (ncu, 2026-11-30: about 1 400 warp instructions
// per row, issued at about 0.6 per scheduler cycle over 528 schedulers at 1.755 GHz):
// about 2 500 us per million rows. Estimate; the H200 fit is in docs/planner.md.
inline constexpr double kDefaultEmbeddingRowUpdateUs = 2500.0;
// The H200's built-in bf16 lookup of the full MLPerf tables (28 M row reads per batch of
// 131072) took 2.8 ms where its bytes take 2.1 ms at the measured copy rate: about 25 us per
// million row reads (bench/results/e2e-20261130-mlperf-b128k-bf16-profile.json). Estimate;
// the H200 fit is in docs/planner.md.
inline constexpr double kDefaultEmbeddingRowReadUs = 25.0;
// NCCL point-to-point traffic between GPUs of one host: about 80% of the per-direction
// peer link rate of the hardware file (protocol headers, chunking, the proxy's
// pipelining). Estimate; no multi-GPU measurement yet.
inline constexpr double kDefaultPeerLinkEfficiency = 0.8;
// One step of a collective algorithm: plan/comm_model.h's kAssumedPeerStepLatencyS
// (10 us, an assumption, not a measurement).
inline constexpr double kDefaultCollectiveLatencyUs = 10.0;

struct StepModelParams {
  std::string arch = "generic";
  bool calibrated = false;
  std::string note = "generic starting values";
  std::array<double, kStepFactorCount> factors = {
      kDefaultGemmFactor,          kDefaultGemmFactor,       kDefaultGemmFactor,        // gemm_fp32, _tf32, _16bit
      kDefaultStreamEfficiency,    kDefaultStreamEfficiency,  kDefaultStreamEfficiency, // elementwise, cross fwd, bwd
      kDefaultStreamEfficiency,                                                         // interaction
      kDefaultStreamEfficiency,    kDefaultStreamEfficiency,                            // embedding fwd, bwd
      kDefaultUploadEfficiency,    kDefaultHostTableEfficiency,                         // upload, host_tables
      kDefaultKernelOverheadUs,    kDefaultStepOverheadUs,                              // overheads
      kDefaultFp16RoundingUs,      kDefaultEmbeddingRowUpdateUs,                        // fp16 rounding, row updates
      kDefaultEmbeddingRowReadUs,                                                       // row reads
      kDefaultPeerLinkEfficiency,  kDefaultCollectiveLatencyUs};                        // collectives
  // Whether every batch's upload runs while the device computes the previous step, even
  // for work whose StepWork::upload_ahead is false (measurements from before the engine
  // copied announced batches ahead, which packed and copied the batch, then ran the step).
  bool upload_overlaps = false;

  double at(StepFactor f) const { return factors[static_cast<std::size_t>(f)]; }
  double& at(StepFactor f) { return factors[static_cast<std::size_t>(f)]; }
};

// The GEMM factor of the pipe a GEMM runs on.
StepFactor gemm_factor(MatrixPrecision pipe);

// The generic values with `arch` set to the hardware's architecture.
StepModelParams default_step_model_params(const Hardware& hw);

}  // namespace hetrec::plan::plan
