#pragma once
// One GEMM kernel configuration: the tile each CTA/workgroup computes, the matrix
// instruction and how the warps issuing it are laid out, the shared-memory pipeline depth,
// how K is decomposed, and the order in which output tiles are launched.
#include <string>
#include <string_view>

namespace hetrec::inline gemm_perf {

// data_parallel: one CTA per output tile. split_k: `split_k` CTAs per tile, each over a
// slice of K, partial sums reduced by a second kernel. stream_k: a persistent grid of one
// CTA per resident slot shares the K iterations of all tiles evenly; tiles cut between
// CTAs are fixed up through a workspace.
enum class GemmDecomposition { data_parallel, split_k, stream_k };

// How split-K slices are summed. workspace_fp32: each slice writes fp32 partials to a
// workspace and a second kernel adds them and runs the epilogue (the model's own kernels).
// workspace_output: the same with partials in the output type. in_place: no second kernel;
// the slices of a tile add their part into D one after another, in the output type.
enum class GemmReduction { workspace_fp32, workspace_output, in_place };

// Launch order of the output tiles. along_n: within a group of `swizzle` tile rows the
// order walks down the g rows of one tile column, then moves to the next column; groups
// follow each other down M. With swizzle = 1 that is plain row-major order (N fastest).
// along_m is the same with the roles of M and N exchanged.
enum class GemmRaster { along_m, along_n };

struct GemmConfig {
  int tile_m = 128;  // output rows per CTA
  int tile_n = 128;  // output columns per CTA
  int tile_k = 64;   // K per main-loop iteration (one shared-memory stage)
  // Matrix instruction shape. For instructions spanning a CTA pair, inst_m counts the
  // rows of the pair (2 x tile_m).
  int inst_m = 64;
  int inst_n = 128;
  int inst_k = 16;
  // Warps (wavefronts on AMD) issuing matrix instructions, laid out warps_m x warps_n over
  // the tile. Hopper's warpgroup instructions take four warps stacked along M each.
  int warps_m = 8;
  int warps_n = 1;
  int stages = 4;     // shared-memory pipeline depth (tiles of A and B in flight)
  int cluster_m = 1;  // thread-block cluster shape (NVIDIA); operands are multicast in it
  int cluster_n = 1;
  GemmDecomposition decomposition = GemmDecomposition::data_parallel;
  int split_k = 1;  // slices of K (split_k only; 1 otherwise)
  GemmReduction reduction = GemmReduction::workspace_fp32;  // split_k only
  GemmRaster raster = GemmRaster::along_n;
  int swizzle = 1;         // tile rows (along_n) or columns (along_m) per raster group
  bool xcd_remap = false;  // AMD: give each XCD a contiguous run of tiles instead of round robin
  // The vendor library's kernel family (cuBLASLt algorithm id) when the configuration is
  // one of its kernels; -1 for the model's idealised kernel. Families differ in how close
  // their main loop gets to the pipe's rate (GemmModelParams::family_efficiency).
  int family = -1;
  // The library's variant of its family's kernel (cuBLASLt's custom option, whose meaning is
  // private to each algorithm); 0 for the family's plain kernel. A variant gets a fitted
  // correction of its own when the calibration saw it (GemmModelParams::family_factor).
  int family_variant = 0;

  bool operator==(const GemmConfig&) const = default;
};

std::string_view decomposition_name(GemmDecomposition d);
std::string_view raster_name(GemmRaster r);
std::string_view reduction_name(GemmReduction r);

// "tile=128x256x64 inst=64x256x16 warps=8x1 stages=4 cluster=2x1 decomposition=split_k
//  split=4 raster=along_n swizzle=8 xcd_remap=0"; " reduction=in_place" and " family=66"
// follow when they are not the defaults.
std::string to_string(const GemmConfig& c);
// Inverse of to_string; throws ConfigError naming `where` and the bad field.
GemmConfig parse_gemm_config(std::string_view text, std::string_view where);

}  // namespace hetrec::gemm_perf::gemm_perf
