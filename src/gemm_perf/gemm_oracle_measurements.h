#pragma once
// The oracle's results (gemm_perf/gemm_oracle.h) in the model's terms: each timed shape as the
// GemmProblem the library runs, each timed cuBLASLt configuration as one or more complete
// GemmConfigs the model can predict, ready for the calibration fit and the selection
// statistics (gemm_perf/gemm_calibration.h).
//
// The library's frame. The engine hands cuBLASLt a row-major product as the column-major
// D^T = op(B)^T op(A)^T (gemm/cublaslt_gemm.h), so the library's M is the engine's N, its A
// operand is the engine's B, and its tile ids, cluster shapes and swizzling are laid out
// along those library dimensions (a tile id "64x8" is 64 along the engine's N). Each shape
// is therefore described as the library runs it: M and N exchanged, A and B exchanged with
// their K-contiguity kept. The model counts the bias vector along its N, which in this frame
// is the engine's M instead of N: at most a few hundred KB more traffic on the suite's
// shapes, a fraction of a microsecond.
//
// Kernel kinds. cuBLASLt exposes a configuration's tile, K per stage, stage count, cluster,
// split-K and swizzle, but not how the kernel is built. Three kinds are told apart by what
// the library does expose:
//   * SIMT: a family (algorithm id) the library also offers for fp32 compute without TF32,
//     which no tensor-core instruction can run; the same id with other operand types is
//     the same kernel family and computes in fp32 on the vector pipes (warps of 32 x 32
//     outputs);
//   * Hopper warpgroup: a stage id of the form "K x AUTO" (the kernel sizes its pipeline to
//     the shared memory, as CUTLASS 3's warp-specialised sm90 kernels do): wgmma, TMA loads
//     multicast within a cluster, one or two consumer warpgroups;
//   * Ampere-generation: every other tensor-core kernel (fixed or undefined stage count):
//     warp-level mma.sync with CUTLASS sm80 warp tiles (at most 64 x 64, 2 x 2 warps from
//     64 up), cp.async loads without multicast, so the cluster launch attribute changes
//     nothing the model sees (cluster 1 x 1).
// The kernel's own choices are modelled as the best the model can describe: a stage count
// the library leaves to the kernel is the deepest pipeline that fits, an automatic cluster
// the best of 1 x 1, 2 x 1 and 1 x 2, and a tile the kernel picks itself (tile id 0) the
// best of the tiles the library's described kernels of the same kind use in this oracle,
// each with the configuration's own split-K (MeasuredCandidate::alternatives). Such
// kernels still carry their family's efficiency.
//
// A configuration the GPU's instructions cannot build (e.g. a 224-row warpgroup tile) has
// no description: it is left out of the candidates but still counts in the shape's best
// measured time, so that the selection statistics never flatter the model.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "hw/hardware.h"
#include "gemm_perf/gemm_calibration.h"
#include "gemm_perf/gemm_config.h"
#include "gemm_perf/gemm_oracle.h"
#include "gemm_perf/gemm_problem.h"

namespace hetrec::inline gemm_perf {

// The shape in the engine's row-major terms. Throws ConfigError naming the shape when its
// precision, output type or epilogue is not one the model covers.
GemmProblem oracle_problem(const OracleShape& shape);

// The same product as the column-major library runs it (see above): M <-> N, A <-> B.
GemmProblem library_frame(const GemmProblem& engine_problem);

enum class LibraryKernelKind { simt, hopper_warpgroup, ampere_mma };
std::string_view library_kernel_kind_name(LibraryKernelKind kind);

// The kind of one timed configuration; `simt_families` are the algorithm ids the oracle
// offers for fp32 compute.
LibraryKernelKind library_kernel_kind(const OracleCandidate& candidate, const std::vector<int>& simt_families);

// The complete configuration of one timed candidate whose tile the library names, in the
// library's frame (`problem` is the library-frame problem), or false (with the reason)
// when it cannot be described on this GPU. `alternatives` receives further configurations
// when the kernel chooses something itself (its cluster).
// With `transposed` given, a Hopper warpgroup kernel whose tile rows the instruction's M does
// not divide but whose columns it does is described as computing the transposed product
// (tile and cluster exchanged, *transposed set): it is then predicted on
// transposed_product(problem).
bool oracle_model_config(const Hardware& hw, const GemmProblem& problem, const OracleCandidate& candidate,
                         LibraryKernelKind kind, GemmConfig& config, std::vector<GemmConfig>& alternatives,
                         std::string& reason, bool* transposed = nullptr);

// One library configuration in the model's terms: the kernel and the further
// configurations it may run as (MeasuredCandidate::alternatives).
struct DescribedLibraryConfig {
  GemmConfig config;
  std::vector<GemmConfig> alternatives;
  bool transposed = false;  // it computes the transposed product (MeasuredCandidate::transposed)
};

// The configurations the library offers for one problem (`problem` in the library's frame),
// described as oracle_measurements describes one shape's: a kernel that picks its own tile
// runs as the menu of tiles and pipelines of the described kernels of its kind in the same
// list. nullopt where a configuration cannot be described. The engine's model selection
// (gemm/cublaslt_model_choice.h) uses it on the configurations cuBLASLt offers at run time.
std::vector<std::optional<DescribedLibraryConfig>> describe_library_configs(
    const Hardware& hw, const GemmProblem& problem, const std::vector<OracleCandidate>& candidates,
    const std::vector<int>& simt_families);

struct OracleConversion {
  std::vector<MeasuredShape> shapes;  // timed shapes with at least one describable candidate
  std::size_t skipped_shapes = 0;     // shapes the oracle did not time (its `skipped`)
  std::size_t undescribed_shapes = 0; // timed shapes with no describable candidate
  std::size_t candidates = 0;         // timed candidates seen
  std::size_t undescribed = 0;        // of them, left out
  std::size_t kernel_chosen_tiles = 0;  // of the described ones, tiles the kernel picks (tile id 0)
  std::size_t oracle_undescribed = 0; // shapes whose fastest candidate is an undescribed one
  // Shapes where the heuristic's own timing (taken first, apart from the candidates) beat
  // every candidate's, its own configuration's included: the oracle is then that time.
  std::size_t heuristic_faster = 0;
  std::vector<int> simt_families;     // algorithm ids classed SIMT
};

OracleConversion oracle_measurements(const Hardware& hw, const GemmOracle& oracle);

}  // namespace hetrec::gemm_perf::gemm_perf
