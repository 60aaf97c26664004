#pragma once
// The per-architecture efficiency constants of the GEMM model: the numbers that are not
// datasheet facts and that a calibration step fits to measurements. They live in
// hw/params/<arch>.toml; the defaults below are generic starting values for an
// architecture without a file.
#include <map>
#include <string>
#include <string_view>

#include "hw/hardware.h"

namespace hetrec::inline gemm_perf {

// ---- generic starting values (used when no hw/params/<arch>.toml exists) ----
// Vendor GEMM libraries sustain roughly 70-85% of the datasheet dense rate on large
// shapes (790 of 989 TFLOP/s bf16 measured on an H200 by `hetrec hw probe`,
// bench/results/probe-20261130-h200.json).
inline constexpr double kDefaultMatrixEfficiency = 0.80;
// Share of the pipe's sustained rate that the previous generation's warp-level matrix
// instruction reaches on a GPU whose newest instruction has a wider issue scope (Hopper
// running Ampere's mma.sync instead of wgmma). 1 = no such penalty (generic).
inline constexpr double kDefaultLegacyInstructionEfficiency = 1.0;
// Fixed start-up of a kernel that issues warpgroup- or CTA-wide matrix instructions fed by
// tensor-memory-access copies (Hopper, Blackwell): fetching its copy descriptors,
// initialising its pipeline barriers and scheduling its clusters before the first load.
// 0 = none (generic; AMD has no such kernels).
inline constexpr double kDefaultAsyncKernelSetupUs = 0.0;
// Bank conflicts and swizzle address overhead on shared memory / LDS reads.
inline constexpr double kDefaultSharedMemoryEfficiency = 0.90;
// L2 -> SM/CU read bandwidth per unit and clock. The AMD CDNA 3 whitepaper gives 2 KB per
// clock per XCD L2 for 38 CUs (54 B); NVIDIA publishes no figure, 64 is a round guess.
inline constexpr double kDefaultL2BytesPerClockPerUnit = 64.0;
// The L2 rate a kernel's loads reach depends on how it loads, relative to the register-free
// asynchronous copies (cp.async, AMD's direct-to-LDS loads) that l2_bytes_per_clock_per_unit
// describes: kernels fed by the tensor memory accelerator (Hopper's warpgroup and
// Blackwell's CTA-wide kernels: one thread moves a whole tile) and SIMT kernels (every
// thread loads its share into registers, then stores it to shared memory) each get a factor.
// 1 = the same rate (generic); fitted per architecture.
inline constexpr double kDefaultTmaL2RateFactor = 1.0;
inline constexpr double kDefaultSimtL2RateFactor = 1.0;
// Largest factor a params file may hold either way.
inline constexpr double kMaxL2RateFactor = 8.0;
// Share of the L2 (and of a memory-side LLC) that operand panels keep between waves, the
// rest being lost to set conflicts and the output stream. Generic guess.
inline constexpr double kDefaultL2UsableFraction = 0.5;
inline constexpr double kDefaultLlcUsableFraction = 0.5;
// Achievable share of datasheet HBM bandwidth: 4.26 of 4.8 TB/s measured on the H200
// (device copy, bench/results/probe-20261130-h200.json).
inline constexpr double kDefaultHbmEfficiency = 0.90;
// Achievable share of the memory-side cache's peak bandwidth. Generic guess.
inline constexpr double kDefaultLlcEfficiency = 0.80;
// Global-load latency under load, the time a shared-memory stage waits for its data: an
// unloaded HBM access is a few hundred ns on current GPUs (published microbenchmarks);
// queueing under a full GEMM raises it. Generic guess.
inline constexpr double kDefaultLoadedLatencyNs = 800.0;
// Share of a tile's pipeline fill and epilogue that is not hidden behind other work
// (1 = none is hidden: no warp specialisation, one CTA per unit).
inline constexpr double kDefaultTileOverheadExposure = 1.0;
// Launch cost of one kernel in a stream, seen as the gap it adds. Generic guess.
inline constexpr double kDefaultLaunchOverheadUs = 3.0;

struct GemmModelParams {
  std::string arch = "generic";                  // the architecture these values are for
  bool calibrated = false;                       // true once fitted to measurements
  std::string note = "generic starting values";  // what they were fitted to, or why chosen
  // Share of the datasheet dense rate sustained in the main loop, by matrix precision.
  PrecisionValues matrix_efficiency = {kDefaultMatrixEfficiency, kDefaultMatrixEfficiency, kDefaultMatrixEfficiency,
                                       kDefaultMatrixEfficiency, kDefaultMatrixEfficiency};
  double legacy_instruction_efficiency = kDefaultLegacyInstructionEfficiency;
  double shared_memory_efficiency = kDefaultSharedMemoryEfficiency;
  double l2_bytes_per_clock_per_unit = kDefaultL2BytesPerClockPerUnit;
  double tma_l2_rate_factor = kDefaultTmaL2RateFactor;
  double simt_l2_rate_factor = kDefaultSimtL2RateFactor;
  double l2_usable_fraction = kDefaultL2UsableFraction;
  double llc_usable_fraction = kDefaultLlcUsableFraction;
  double hbm_efficiency = kDefaultHbmEfficiency;
  double llc_efficiency = kDefaultLlcEfficiency;
  double loaded_latency_ns = kDefaultLoadedLatencyNs;
  double tile_overhead_exposure = kDefaultTileOverheadExposure;
  double launch_overhead_us = kDefaultLaunchOverheadUs;
  double async_kernel_setup_us = kDefaultAsyncKernelSetupUs;
  // Per vendor-library kernel family (its algorithm id, e.g. "66"): the share of the modelled
  // main-loop speed that family's kernels reach (fitted; 1 when absent). Kernels of one tile
  // shape and instruction still differ by implementation (software pipelining, epilogue,
  // scheduling), which the tile alone does not reveal. A family is one kernel template over
  // operand types, so one factor serves all the pipes it runs on.
  // A family's variant (GemmConfig::family_variant) has a key of its own, "66.3"; where
  // the file has none, the variant runs at its family's factor.
  std::map<std::string, double> family_efficiency;

  double family_factor(int family, int variant = 0) const;
};

// "66" for a family's plain kernel, "66.3" for its variant 3.
std::string family_key(int family, int variant = 0);

// Reads a params file; unknown, missing, mistyped or out-of-range keys are ConfigErrors
// naming the file and key.
GemmModelParams load_gemm_params(const std::string& path);
// Writes every field with full precision, so that load(save(p)) == p.
void save_gemm_params(const GemmModelParams& params, const std::string& path);
// Loads `<params_dir>/<hw.arch>.toml` if it exists, else the generic defaults with arch set.
GemmModelParams load_gemm_params_for(const Hardware& hw, const std::string& params_dir);
// A short hex digest of every field: selections made under other params are stale.
std::string gemm_params_fingerprint(const GemmModelParams& params);

}  // namespace hetrec::gemm_perf::gemm_perf
