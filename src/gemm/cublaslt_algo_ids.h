#pragma once
// cuBLASLt's algorithm configuration ids (tile, stages, cluster shape) as shapes, and one
// enumerated configuration described in the analytical model's terms (gemm_perf/GemmConfig).
// The ids are the numeric values of cuBLASLt's enums; the mapping needs the CUDA build
// (it is written against the enumerators of cublasLt.h); the header names no vendor type.
#include <optional>
#include <string>
#include <string_view>

#include "gemm_perf/gemm_config.h"

namespace hetrec::inline gemm::cublaslt {

struct IdShape {
  int id = 0;
  int a = 0, b = 0, c = 0;  // tile: M, N; stages: K per stage, count (0 = automatic); cluster: M, N, K
};

// nullopt for an id the header does not define (and for the UNDEFINED / AUTO ids).
std::optional<IdShape> tile_shape(int tile_id);
std::optional<IdShape> stages_shape(int stages_id);
std::optional<IdShape> cluster_shape(int cluster_id);
int tile_id_end();     // one past the largest tile id
int stages_id_end();
int cluster_id_end();

// "128x256", "64x4", "64xAUTO", "2x1x1"; "auto" for 0 / unknown ids.
std::string tile_text(int tile_id);
std::string stages_text(int stages_id);
std::string cluster_text(int cluster_id);

// One cuBLASLt algorithm configuration: the values of its CUBLASLT_ALGO_CONFIG_* attributes.
struct AlgoConfig {
  int algo_id = 0;
  int tile_id = 0;
  int stages_id = 0;
  int split_k = 1;
  int reduction = 0;  // reduction-scheme bit, 0 when split_k == 1
  int swizzle = 0;
  int custom_option = 0;
  int cluster_id = 0;  // 0 = automatic
  bool operator==(const AlgoConfig&) const = default;
};

// gemm_perf/gemm_oracle.h's oracle_candidate_key:
// "a<algo>.t<tile>.s<stages>.k<split>.r<reduction>.w<swizzle>.c<cluster>.o<custom>"
std::string algo_key(const AlgoConfig& c);
// Inverse of algo_key; nullopt when `key` is not of that form.
std::optional<AlgoConfig> parse_algo_key(std::string_view key);

// The configuration in the model's terms: tile M x N from the tile id, tile K and stages
// from the stages id (stages 0 when the kernel picks them), cluster M x N from the cluster
// id (0 x 0 when automatic), split-K, and swizzle (cuBLASLt's on/off CTA swizzling as
// swizzle 8 or 1: the library does not publish its group width; 8 is CUTLASS's default).
// Fields cuBLASLt does not expose (matrix instruction, warps) keep GemmConfig's defaults;
// an undefined tile (0) gives tile 0 x 0.
GemmConfig gemm_config_of(const AlgoConfig& c);

}  // namespace hetrec::gemm::cublaslt
