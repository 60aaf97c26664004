#pragma once
// Every cuBLASLt algorithm configuration that runs a problem, for the oracle that times
// them (gemm/gemm_bench.h). CUDA only: hipBLASLt has no per-configuration enumeration.
//
// The enumeration is bounded, one factor at a time around a base (docs/perf_model.md):
//   base: every algorithm id x every tile of its TILE_IDS x every stages id of its
//         STAGES_IDS, with split-K 1, no swizzling, automatic cluster, custom option 0;
//   from every base cuBLASLt accepts: split-K 2, 4, 8, 16 (if SPLITK_SUPPORT) with each
//         reduction scheme of REDUCTION_SCHEME_MASK; CTA swizzling on (if
//         CTA_SWIZZLING_SUPPORT); each explicit cluster shape of kClusterShapes; each
//         custom option 1..CUSTOM_OPTION_MAX (at most 16).
//   a base cuBLASLt refuses with the automatic cluster (Hopper fp8 kernels need an
//         explicit one) is tried with each explicit cluster shape instead, and every
//         accepted one is a base of its own for the split-K, swizzling and custom-option
//         variations.
// Each configuration is validated with cublasLtMatmulAlgoCheck; those needing more
// workspace than given are dropped (and counted).
#include <array>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "gemm/cublaslt_algo_ids.h"
#include "gemm/cublaslt_problem.h"

namespace hetrec::inline gemm::cublaslt {

struct EnumeratedAlgo {
  AlgoConfig config;
  cublasLtMatmulAlgo_t algo{};
  std::size_t workspace = 0;
};

// Whether two algorithm structs are the same bytes (a listed struct and its rebuilt twin can
// be: they run the same kernel).
bool same_algo(const cublasLtMatmulAlgo_t& a, const cublasLtMatmulAlgo_t& b);

struct AlgoEnumeration {
  std::vector<EnumeratedAlgo> valid;  // in enumeration order (algo id, tile, stages, variant)
  int algo_ids = 0;                   // ids cuBLASLt lists for the types
  int checked = 0;                    // configurations given to cublasLtMatmulAlgoCheck
  int over_workspace = 0;             // valid but needing more than the workspace limit
  // (algo id, tile id, stages id) whose automatic-cluster base was refused, so that
  // explicit-cluster bases were enumerated for them.
  std::vector<std::array<int, 3>> explicit_cluster_bases;
};

// The algorithm ids cuBLASLt lists for a compute type with fp32 scaling, A and B of type
// `ab` and C and D of type `d`.
std::vector<int> list_algo_ids(cublasLtHandle_t handle, cublasComputeType_t compute, cudaDataType ab, cudaDataType d);

// Whether the operands' alignment meets the algorithm's minimums (its MIN_ALIGNMENT_*
// capabilities; the column-major product's A is our B and its B our A, C and D our D).
bool alignment_allows(const cublasLtMatmulAlgo_t& algo, const Alignment& alignment);

AlgoEnumeration enumerate_algos(cublasLtHandle_t handle, const Problem& problem, const MatmulDescriptors& desc,
                                std::size_t workspace_limit);

// The configuration attributes of an algorithm (as the heuristic returns it, say).
AlgoConfig read_algo_config(const cublasLtMatmulAlgo_t& algo);

// Whether the enumeration's bounds include `config` (split-K in {1,2,4,8,16}, a listed
// cluster shape, custom option <= 16, at most one factor away from its base, where an
// explicit cluster is part of the base for the bases `enumeration` lists in
// explicit_cluster_bases); if not, `why` says which bound it is outside.
bool within_enumeration_bounds(const AlgoConfig& config, const AlgoEnumeration& enumeration, std::string* why);

// Validates one configuration (the heuristic's, say) with cublasLtMatmulAlgoCheck; nullopt
// when cuBLASLt refuses it or it needs more than the workspace limit.
std::optional<EnumeratedAlgo> check_algo(cublasLtHandle_t handle, const MatmulDescriptors& desc,
                                         const cublasLtMatmulAlgo_t& algo, std::size_t workspace_limit);

// Configurations of cuBLASLt's heuristic asked for beside the enumeration: its list reaches
// configurations outside the enumeration's bounds (a cluster with a custom option, an odd
// split-K) that are often among the fastest.
inline constexpr int kHeuristicConfigs = 16;

// Appends the configurations of the heuristic's list (heuristic_algos, queried by the
// caller, who may need the list itself) that `enumeration` does not hold yet, each validated
// with check_algo; returns how many were added. With `keep_returned`, an enumerated
// configuration equal to a listed one runs as the struct the heuristic returned (a struct
// rebuilt from the same attributes may run another kernel); the oracle keeps the rebuilt
// ones, to time both.
std::size_t add_heuristic_configs(cublasLtHandle_t handle, const MatmulDescriptors& desc, std::size_t workspace_limit,
                                  std::span<const cublasLtMatmulAlgo_t> heuristic, AlgoEnumeration& enumeration,
                                  bool keep_returned = false);

// One configuration by its attributes (a cached choice, say), validated with
// cublasLtMatmulAlgoCheck for the problem; nullopt when cuBLASLt refuses it or it needs more
// than the workspace limit.
std::optional<EnumeratedAlgo> check_config(cublasLtHandle_t handle, const Problem& problem,
                                           const MatmulDescriptors& desc, const AlgoConfig& config,
                                           std::size_t workspace_limit);

// Index in `algos` of the configuration equal to `config`, if any.
std::optional<std::size_t> find_config(const std::vector<EnumeratedAlgo>& algos, const AlgoConfig& config);

}  // namespace hetrec::gemm::cublaslt
