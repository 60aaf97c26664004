// CUDA only: hipBLASLt has no per-configuration enumeration; the CPU build no cuBLASLt.
#if defined(HETREC_WITH_CUDA)
#include "gemm/cublaslt_algos.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <string>

#include "core/error.h"

namespace hetrec::inline gemm::cublaslt {

bool same_algo(const cublasLtMatmulAlgo_t& a, const cublasLtMatmulAlgo_t& b) {
  return std::memcmp(&a, &b, sizeof(cublasLtMatmulAlgo_t)) == 0;
}

namespace {

// Split-K slice counts tried from every base (the model's own set plus 1).
constexpr int kSplitK[] = {2, 4, 8, 16};
// Explicit cluster shapes tried from every base (cuBLASLt has no capability listing the
// shapes an algorithm takes, so a fixed set: Hopper's 1- and 2-CTA clusters along M and N
// and the 2x2 and 4-wide ones CUTLASS builds; AlgoCheck drops those a kernel refuses).
constexpr cublasLtClusterShape_t kClusterShapes[] = {CUBLASLT_CLUSTER_SHAPE_1x1x1, CUBLASLT_CLUSTER_SHAPE_2x1x1,
                                                     CUBLASLT_CLUSTER_SHAPE_1x2x1, CUBLASLT_CLUSTER_SHAPE_2x2x1,
                                                     CUBLASLT_CLUSTER_SHAPE_4x1x1, CUBLASLT_CLUSTER_SHAPE_1x4x1};
constexpr uint32_t kReductionSchemes[] = {CUBLASLT_REDUCTION_SCHEME_INPLACE, CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE,
                                          CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE};
// Custom options tried (1..min(CUSTOM_OPTION_MAX, this)); their meaning is private to each
// algorithm, so they are only recorded, never mapped into the model's configuration.
constexpr int kMaxCustomOption = 16;
// Ids asked of cublasLtMatmulAlgoGetIds (cuBLAS 13 lists a few dozen per type combination).
constexpr int kMaxAlgoIds = 1024;

template <class T>
void set_config(cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attr, T value) {
  HETREC_BLAS_CHECK(cublasLtMatmulAlgoConfigSetAttribute(&algo, attr, &value, sizeof(value)));
}

template <class T>
T get_config(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attr) {
  T value{};
  std::size_t written = 0;
  HETREC_BLAS_CHECK(cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, &value, sizeof(value), &written));
  return value;
}

template <class T>
T get_cap(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoCapAttributes_t attr) {
  T value{};
  std::size_t written = 0;
  HETREC_BLAS_CHECK(cublasLtMatmulAlgoCapGetAttribute(&algo, attr, &value, sizeof(value), &written));
  return value;
}

// An id-list capability (TILE_IDS, STAGES_IDS): {0} (undefined) when the algorithm has none.
std::vector<uint32_t> get_id_list(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoCapAttributes_t attr) {
  std::size_t bytes = 0;
  HETREC_BLAS_CHECK(cublasLtMatmulAlgoCapGetAttribute(&algo, attr, nullptr, 0, &bytes));
  std::vector<uint32_t> ids(bytes / sizeof(uint32_t));
  if (!ids.empty())
    HETREC_BLAS_CHECK(cublasLtMatmulAlgoCapGetAttribute(&algo, attr, ids.data(), ids.size() * sizeof(uint32_t), &bytes));
  if (ids.empty()) ids.push_back(0);
  return ids;
}

void apply(cublasLtMatmulAlgo_t& algo, const AlgoConfig& c) {
  set_config(algo, CUBLASLT_ALGO_CONFIG_TILE_ID, static_cast<uint32_t>(c.tile_id));
  set_config(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, static_cast<uint32_t>(c.stages_id));
  set_config(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, static_cast<int32_t>(c.split_k));
  set_config(algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, static_cast<uint32_t>(c.reduction));
  set_config(algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, static_cast<uint32_t>(c.swizzle));
  set_config(algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, static_cast<uint32_t>(c.custom_option));
  set_config(algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, static_cast<uint16_t>(c.cluster_id));
}

// The compute type and the A/B and C/D types of cuBLASLt's view of the problem.
struct LibraryTypes {
  cublasComputeType_t compute;
  cudaDataType ab, d;
};
LibraryTypes library_types(const Problem& p) {
  return {p.precision == Precision::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F,
          data_type(operand_dtype(p.precision)), data_type(p.d_type)};
}

// An algorithm of id config.algo_id for the types, with the configuration applied; nullopt
// when cuBLASLt does not know the id for them.
std::optional<cublasLtMatmulAlgo_t> init_config(cublasLtHandle_t handle, const LibraryTypes& t, const AlgoConfig& c) {
  cublasLtMatmulAlgo_t algo{};
  if (cublasLtMatmulAlgoInit(handle, t.compute, CUDA_R_32F, t.ab, t.ab, t.d, t.d, c.algo_id, &algo) !=
      CUBLAS_STATUS_SUCCESS)
    return std::nullopt;
  apply(algo, c);
  return algo;
}

}  // namespace

AlgoConfig read_algo_config(const cublasLtMatmulAlgo_t& algo) {
  AlgoConfig c;
  c.algo_id = get_config<int32_t>(algo, CUBLASLT_ALGO_CONFIG_ID);
  c.tile_id = static_cast<int>(get_config<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_TILE_ID));
  c.stages_id = static_cast<int>(get_config<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID));
  c.split_k = get_config<int32_t>(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM);
  if (c.split_k < 1) c.split_k = 1;
  c.reduction = c.split_k > 1 ? static_cast<int>(get_config<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME)) : 0;
  c.swizzle = static_cast<int>(get_config<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING));
  c.custom_option = static_cast<int>(get_config<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION));
  c.cluster_id = static_cast<int>(get_config<uint16_t>(algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID));
  return c;
}

bool within_enumeration_bounds(const AlgoConfig& c, const AlgoEnumeration& enumeration, std::string* why) {
  const std::array<int, 3> base{c.algo_id, c.tile_id, c.stages_id};
  const bool cluster_in_base = c.cluster_id != 0 && std::find(enumeration.explicit_cluster_bases.begin(),
                                                              enumeration.explicit_cluster_bases.end(),
                                                              base) != enumeration.explicit_cluster_bases.end();
  std::string reason;
  if (std::find(std::begin(kSplitK), std::end(kSplitK), c.split_k) == std::end(kSplitK) && c.split_k != 1)
    reason = "split-K " + std::to_string(c.split_k) + " is not 1, 2, 4, 8 or 16";
  else if (c.cluster_id != 0 && std::find(std::begin(kClusterShapes), std::end(kClusterShapes),
                                          static_cast<cublasLtClusterShape_t>(c.cluster_id)) == std::end(kClusterShapes))
    reason = "cluster shape " + cluster_text(c.cluster_id) + " is not in the enumerated set";
  else if (c.custom_option > kMaxCustomOption)
    reason = "custom option " + std::to_string(c.custom_option) + " is above " + std::to_string(kMaxCustomOption);
  else if ((c.split_k > 1) + (c.swizzle != 0) + (c.cluster_id != 0 && !cluster_in_base) + (c.custom_option != 0) > 1)
    reason = "it combines several of split-K, swizzling, an explicit cluster and a custom option";
  if (why) *why = reason;
  return reason.empty();
}

std::optional<EnumeratedAlgo> check_algo(cublasLtHandle_t handle, const MatmulDescriptors& desc,
                                         const cublasLtMatmulAlgo_t& algo, std::size_t workspace_limit) {
  cublasLtMatmulHeuristicResult_t result{};
  cublasLtMatmulAlgo_t copy = algo;
  if (cublasLtMatmulAlgoCheck(handle, desc.desc, desc.a, desc.b, desc.d, desc.d, &copy, &result) !=
          CUBLAS_STATUS_SUCCESS ||
      result.state != CUBLAS_STATUS_SUCCESS || result.workspaceSize > workspace_limit)
    return std::nullopt;
  return EnumeratedAlgo{read_algo_config(algo), algo, result.workspaceSize};
}

std::optional<EnumeratedAlgo> check_config(cublasLtHandle_t handle, const Problem& p, const MatmulDescriptors& desc,
                                           const AlgoConfig& config, std::size_t workspace_limit) {
  const auto algo = init_config(handle, library_types(p), config);
  return algo ? check_algo(handle, desc, *algo, workspace_limit) : std::nullopt;
}

std::size_t add_heuristic_configs(cublasLtHandle_t handle, const MatmulDescriptors& desc, std::size_t workspace_limit,
                                  std::span<const cublasLtMatmulAlgo_t> heuristic, AlgoEnumeration& enumeration,
                                  bool keep_returned) {
  std::size_t added = 0;
  for (const cublasLtMatmulAlgo_t& algo : heuristic) {
    if (const auto equal = find_config(enumeration.valid, read_algo_config(algo))) {
      if (keep_returned)
        if (auto checked = check_algo(handle, desc, algo, workspace_limit)) enumeration.valid[*equal] = *checked;
      continue;
    }
    if (auto checked = check_algo(handle, desc, algo, workspace_limit)) {
      enumeration.valid.push_back(*checked);
      ++added;
    }
  }
  return added;
}

std::optional<std::size_t> find_config(const std::vector<EnumeratedAlgo>& algos, const AlgoConfig& config) {
  for (std::size_t i = 0; i < algos.size(); ++i)
    if (algos[i].config == config) return i;
  return std::nullopt;
}

std::vector<int> list_algo_ids(cublasLtHandle_t handle, cublasComputeType_t compute, cudaDataType ab, cudaDataType d) {
  std::vector<int> ids(kMaxAlgoIds);
  int found = 0;
  HETREC_BLAS_CHECK(cublasLtMatmulAlgoGetIds(handle, compute, CUDA_R_32F, ab, ab, d, d, kMaxAlgoIds, ids.data(), &found));
  ids.resize(static_cast<std::size_t>(found));
  return ids;
}

bool alignment_allows(const cublasLtMatmulAlgo_t& algo, const Alignment& al) {
  const auto at_least = [&](cublasLtMatmulAlgoCapAttributes_t attr, int have) {
    return get_cap<uint32_t>(algo, attr) <= static_cast<uint32_t>(have);
  };
  return at_least(CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_A_BYTES, al.b) &&
         at_least(CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_B_BYTES, al.a) &&
         at_least(CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_C_BYTES, al.d) &&
         at_least(CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_D_BYTES, al.d);
}

AlgoEnumeration enumerate_algos(cublasLtHandle_t handle, const Problem& p, const MatmulDescriptors& desc,
                                std::size_t workspace_limit) {
  AlgoEnumeration out;
  const LibraryTypes types = library_types(p);
  const cudaDataType ab = types.ab, d = types.d;
  const cublasComputeType_t compute = types.compute;
  const std::vector<int> ids = list_algo_ids(handle, compute, ab, d);
  out.algo_ids = static_cast<int>(ids.size());

  // Checks one configuration; keeps it when cuBLASLt accepts it within the workspace.
  auto try_config = [&](const AlgoConfig& c) -> bool {
    const auto initialised = init_config(handle, types, c);
    if (!initialised) return false;
    cublasLtMatmulAlgo_t algo = *initialised;
    ++out.checked;
    cublasLtMatmulHeuristicResult_t result{};
    if (cublasLtMatmulAlgoCheck(handle, desc.desc, desc.a, desc.b, desc.d, desc.d, &algo, &result) !=
            CUBLAS_STATUS_SUCCESS ||
        result.state != CUBLAS_STATUS_SUCCESS)
      return false;
    if (result.workspaceSize > workspace_limit) {
      ++out.over_workspace;
      return false;
    }
    out.valid.push_back({c, algo, result.workspaceSize});
    return true;
  };

  for (const int id : ids) {
    cublasLtMatmulAlgo_t algo{};
    if (cublasLtMatmulAlgoInit(handle, compute, CUDA_R_32F, ab, ab, d, d, id, &algo) != CUBLAS_STATUS_SUCCESS) continue;
    const auto tiles = get_id_list(algo, CUBLASLT_ALGO_CAP_TILE_IDS);
    const auto stages = get_id_list(algo, CUBLASLT_ALGO_CAP_STAGES_IDS);
    const bool splitk = get_cap<int32_t>(algo, CUBLASLT_ALGO_CAP_SPLITK_SUPPORT) != 0;
    const uint32_t schemes = get_cap<uint32_t>(algo, CUBLASLT_ALGO_CAP_REDUCTION_SCHEME_MASK);
    const bool swizzle = get_cap<uint32_t>(algo, CUBLASLT_ALGO_CAP_CTA_SWIZZLING_SUPPORT) != 0;
    const int custom_max = std::min(get_cap<int32_t>(algo, CUBLASLT_ALGO_CAP_CUSTOM_OPTION_MAX), kMaxCustomOption);
    // The variations of an accepted base: split-K, swizzling, the explicit clusters (for an
    // automatic-cluster base) and the custom options, in that order.
    auto try_variations = [&](const AlgoConfig& base) {
      if (splitk) {
        for (const int s : kSplitK) {
          for (const uint32_t scheme : kReductionSchemes) {
            if (!(schemes & scheme)) continue;
            AlgoConfig c = base;
            c.split_k = s;
            c.reduction = static_cast<int>(scheme);
            try_config(c);
          }
        }
      }
      if (swizzle) {
        AlgoConfig c = base;
        c.swizzle = 1;
        try_config(c);
      }
      if (base.cluster_id == 0) {
        for (const auto cluster : kClusterShapes) {
          AlgoConfig c = base;
          c.cluster_id = static_cast<int>(cluster);
          try_config(c);
        }
      }
      for (int option = 1; option <= custom_max; ++option) {
        AlgoConfig c = base;
        c.custom_option = option;
        try_config(c);
      }
    };
    for (const uint32_t tile : tiles) {
      for (const uint32_t stage : stages) {
        AlgoConfig base;
        base.algo_id = id;
        base.tile_id = static_cast<int>(tile);
        base.stages_id = static_cast<int>(stage);
        if (!try_config(base)) {
          // Refused with the automatic cluster: each explicit cluster as a base of its own.
          bool any = false;
          for (const auto cluster : kClusterShapes) {
            AlgoConfig c = base;
            c.cluster_id = static_cast<int>(cluster);
            if (!try_config(c)) continue;
            any = true;
            try_variations(c);
          }
          if (any) out.explicit_cluster_bases.push_back({base.algo_id, base.tile_id, base.stages_id});
          continue;
        }
        try_variations(base);
      }
    }
  }
  return out;
}

}  // namespace hetrec::gemm::cublaslt
#endif
