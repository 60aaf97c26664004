#include "gemm_perf/gemm_candidates.h"

#include <algorithm>

#include "gemm_perf/gemm_model.h"

namespace hetrec::inline gemm_perf {

namespace {

// Stage depth along K in bytes: one 128-byte row per stage, the width of the TMA 128-byte
// swizzle (CUTLASS sm90/sm100 default tile K: 64 for bf16, 128 for fp8, 32 for tf32).
constexpr int kTmaStageBytesK = 128;
// Pipeline depths to enumerate (deepest first), as CUTLASS's stage-count carve-out picks.
constexpr int kMaxStages = 7;
constexpr int kMinStages = 2;
// CUTLASS sm90 collective-builder tile shapes.
constexpr int kHopperTileM[] = {64, 128, 256};
constexpr int kHopperTileN[] = {64, 128, 192, 256};
// Consumer warpgroups along M: one for 64-row tiles, two (cooperative) for larger ones.
constexpr int kHopperMaxConsumerWarpgroups = 2;
// CUTLASS sm100 tile N choices per MMA.
constexpr int kBlackwellTileN[] = {64, 128, 192, 256};
// Epilogue warps of CUTLASS sm100 kernels (one warpgroup reads TMEM).
constexpr int kBlackwellEpilogueWarps = 4;
// hipBLASLt macro-tile edges (16 for skinny shapes, on 16x16 MFMAs) and depths (DepthU
// 32/64 for 16-bit types = 64/128 bytes).
constexpr int kMfmaTileEdges[] = {16, 32, 64, 128, 256};
constexpr int kMfmaDepthBytes[] = {64, 128};
// hipBLASLt kernels keep two or three K tiles in LDS (double buffer, optional prefetch).
constexpr int kMfmaStages[] = {3, 2};
// hipBLASLt lays 2x2 wavefronts (256 threads) over macro tiles from 64 up, one below.
constexpr int kMfmaTwoWaveEdge = 64;
// CUTLASS sm80 (Ampere mma.sync) threadblock tiles with their warp layouts: 64x64 warp
// tiles on the large shapes, 32-wide ones on the smaller, four or eight warps per block.
struct AmpereTile {
  int m, n, warps_m, warps_n;
};
constexpr AmpereTile kAmpereTiles[] = {{256, 128, 4, 2}, {128, 256, 2, 4}, {128, 128, 2, 2}, {128, 64, 2, 2},
                                       {64, 128, 2, 2},  {64, 64, 2, 2},   {64, 32, 2, 1},   {32, 64, 1, 2}};
// Tile depth in bytes per row (32 or 64 16-bit elements, 16 or 32 tf32) and the cp.async
// pipeline depths of CUTLASS's sm80 kernels (deepest first; shared memory caps the rest).
constexpr int kAmpereDepthBytes[] = {64, 128};
constexpr int kAmpereStages[] = {6, 5, 4, 3};
// CUTLASS SIMT sgemm tiles and depths, with 32x64 warp tiles.
constexpr int kSimtTileEdges[] = {64, 128};
constexpr int kSimtWarpTileM = 32;
constexpr int kSimtWarpTileN = 64;
constexpr int kSimtTileK[] = {8, 16};
constexpr int kSimtStages[] = {4, 3, 2};
// K decompositions and launch orders every family is crossed with.
constexpr int kSplitKFactors[] = {2, 4, 8, 16};
constexpr int kSwizzles[] = {1, 8};

struct Cluster {
  int m, n;
};

const MatrixInstruction* find_instruction(const Hardware& hw, MatrixPrecision p, IssueScope scope, int m,
                                          int ctas) {
  for (const MatrixInstruction& mi : hw.matrix_instructions)
    if (mi.precision == p && mi.scope == scope && mi.m == m && mi.ctas == ctas) return &mi;
  return nullptr;
}

class CandidateList {
 public:
  CandidateList(const Hardware& hw, MatrixPrecision p) : hw_(hw), precision_(p) {}

  // Adds `kernel` crossed with every decomposition and launch order, if it fits.
  void add(const GemmConfig& kernel) {
    if (!gemm_kernel_traits(hw_, GemmModelParams{}, precision_, kernel).feasible) return;
    std::vector<GemmConfig> decomposed;
    GemmConfig c = kernel;
    c.decomposition = GemmDecomposition::data_parallel, c.split_k = 1;
    decomposed.push_back(c);
    for (int s : kSplitKFactors) {
      c.decomposition = GemmDecomposition::split_k, c.split_k = s;
      decomposed.push_back(c);
    }
    c.decomposition = GemmDecomposition::stream_k, c.split_k = 1;
    decomposed.push_back(c);
    for (GemmConfig d : decomposed) {
      for (GemmRaster r : {GemmRaster::along_n, GemmRaster::along_m}) {
        for (int swizzle : kSwizzles) {
          d.raster = r, d.swizzle = swizzle;
          d.xcd_remap = false;
          out_.push_back(d);
          if (hw_.xcds > 1) {
            d.xcd_remap = true;
            out_.push_back(d);
          }
        }
      }
    }
  }

  std::vector<GemmConfig> take() { return std::move(out_); }

 private:
  const Hardware& hw_;
  MatrixPrecision precision_;
  std::vector<GemmConfig> out_;
};

std::vector<Cluster> clusters_up_to(int max_size, std::initializer_list<Cluster> shapes) {
  std::vector<Cluster> out;
  for (Cluster c : shapes)
    if (c.m * c.n <= max_size) out.push_back(c);
  return out;
}

void add_hopper(const Hardware& hw, MatrixPrecision p, const MatrixInstruction& mi, CandidateList& list) {
  const int tile_k = kTmaStageBytesK / int(precision_operand_bytes(p));
  for (int tm : kHopperTileM) {
    const int warpgroups = std::min(kHopperMaxConsumerWarpgroups, tm / mi.m);
    for (int tn : kHopperTileN) {
      if (!mi.allows_n(tn)) continue;
      for (Cluster cl : clusters_up_to(hw.max_cluster_size, {{1, 1}, {2, 1}, {1, 2}})) {
        for (int stages = kMaxStages; stages >= kMinStages; --stages) {
          GemmConfig c;
          c.tile_m = tm, c.tile_n = tn, c.tile_k = tile_k;
          c.inst_m = mi.m, c.inst_n = tn, c.inst_k = mi.k;
          c.warps_m = kWarpsPerWarpgroup * warpgroups, c.warps_n = 1;
          c.stages = stages;
          c.cluster_m = cl.m, c.cluster_n = cl.n;
          list.add(c);
        }
      }
    }
  }
}

void add_blackwell(const Hardware& hw, MatrixPrecision p, CandidateList& list) {
  const int tile_k = kTmaStageBytesK / int(precision_operand_bytes(p));
  struct Family {
    int inst_m, ctas;
    std::vector<Cluster> clusters;
  };
  const Family families[] = {
      {64, 1, clusters_up_to(hw.max_cluster_size, {{1, 1}, {2, 1}, {1, 2}})},
      {128, 1, clusters_up_to(hw.max_cluster_size, {{1, 1}, {2, 1}, {1, 2}})},
      {256, 2, clusters_up_to(hw.max_cluster_size, {{2, 1}, {2, 2}, {4, 1}})},
  };
  for (const Family& f : families) {
    const MatrixInstruction* mi = find_instruction(hw, p, IssueScope::cta, f.inst_m, f.ctas);
    if (!mi) continue;
    for (int tn : kBlackwellTileN) {
      if (!mi->allows_n(tn)) continue;
      for (Cluster cl : f.clusters) {
        for (int stages = kMaxStages; stages >= kMinStages; --stages) {
          GemmConfig c;
          c.tile_m = f.inst_m / f.ctas, c.tile_n = tn, c.tile_k = tile_k;
          c.inst_m = f.inst_m, c.inst_n = tn, c.inst_k = mi->k;
          c.warps_m = kBlackwellEpilogueWarps, c.warps_n = 1;
          c.stages = stages;
          c.cluster_m = cl.m, c.cluster_n = cl.n;
          list.add(c);
        }
      }
    }
  }
}

void add_mfma(const Hardware& hw, MatrixPrecision p, CandidateList& list) {
  const MatrixInstruction* big = nullptr;    // 32x32
  const MatrixInstruction* small = nullptr;  // 16x16
  for (const MatrixInstruction& mi : hw.matrix_instructions) {
    if (mi.precision != p || mi.scope != IssueScope::warp || mi.m == 1 || mi.n_min != mi.n_max) continue;
    if (!big || mi.m > big->m) big = &mi;
    if (!small || mi.m < small->m) small = &mi;
  }
  if (!big) return;
  for (int tm : kMfmaTileEdges) {
    for (int tn : kMfmaTileEdges) {
      const int wm = tm >= kMfmaTwoWaveEdge ? 2 : 1;
      const int wn = tn >= kMfmaTwoWaveEdge ? 2 : 1;
      const int wave_m = tm / wm, wave_n = tn / wn;
      const MatrixInstruction* mi = (wave_m % big->m == 0 && wave_n % big->n_min == 0) ? big : small;
      for (int depth_bytes : kMfmaDepthBytes) {
        const int tile_k = depth_bytes / int(precision_operand_bytes(p));
        for (int stages : kMfmaStages) {
          GemmConfig c;
          c.tile_m = tm, c.tile_n = tn, c.tile_k = tile_k;
          c.inst_m = mi->m, c.inst_n = mi->n_min, c.inst_k = mi->k;
          c.warps_m = wm, c.warps_n = wn;
          c.stages = stages;
          list.add(c);
        }
      }
    }
  }
}

void add_ampere(MatrixPrecision p, const MatrixInstruction& mi, CandidateList& list) {
  for (const AmpereTile& t : kAmpereTiles) {
    for (int depth_bytes : kAmpereDepthBytes) {
      const int tile_k = depth_bytes / int(precision_operand_bytes(p));
      if (tile_k % mi.k != 0) continue;
      for (int stages : kAmpereStages) {
        GemmConfig c;
        c.tile_m = t.m, c.tile_n = t.n, c.tile_k = tile_k;
        c.inst_m = mi.m, c.inst_n = mi.n_min, c.inst_k = mi.k;
        c.warps_m = t.warps_m, c.warps_n = t.warps_n;
        c.stages = stages;
        list.add(c);
      }
    }
  }
}

void add_simt(const MatrixInstruction& mi, CandidateList& list) {
  for (int tm : kSimtTileEdges) {
    for (int tn : kSimtTileEdges) {
      for (int tile_k : kSimtTileK) {
        for (int stages : kSimtStages) {
          GemmConfig c;
          c.tile_m = tm, c.tile_n = tn, c.tile_k = tile_k;
          c.inst_m = mi.m, c.inst_n = mi.n_min, c.inst_k = mi.k;
          c.warps_m = tm / kSimtWarpTileM, c.warps_n = tn / kSimtWarpTileN;
          c.stages = stages;
          list.add(c);
        }
      }
    }
  }
}

}  // namespace

std::vector<GemmConfig> gemm_candidates(const Hardware& hw, MatrixPrecision precision) {
  CandidateList list(hw, precision);
  const MatrixInstruction* warpgroup = nullptr;
  const MatrixInstruction* simt = nullptr;
  const MatrixInstruction* warp_matrix = nullptr;
  bool has_cta = false;
  for (const MatrixInstruction& mi : hw.matrix_instructions) {
    if (mi.precision != precision) continue;
    if (mi.scope == IssueScope::warpgroup && !warpgroup) warpgroup = &mi;
    if (mi.scope == IssueScope::cta) has_cta = true;
    if (mi.scope == IssueScope::warp && mi.m == 1 && mi.n_max == 1) simt = &mi;
    if (mi.scope == IssueScope::warp && mi.m > 1 && !warp_matrix) warp_matrix = &mi;
  }
  if (warpgroup) add_hopper(hw, precision, *warpgroup, list);
  if (has_cta) add_blackwell(hw, precision, list);
  // Warp-level matrix instructions make the candidates only where they are the GPU's
  // newest scope (Ampere's mma.sync, AMD's MFMA): Hopper also lists the Ampere-generation
  // mma.sync, which the library's older kernels issue, but CUTLASS's Hopper kernels are
  // built on wgmma.
  if (warp_matrix && !warpgroup && !has_cta) {
    if (hw.vendor == Vendor::nvidia) add_ampere(precision, *warp_matrix, list);
    else add_mfma(hw, precision, list);
  }
  if (simt) add_simt(*simt, list);
  return list.take();
}

std::vector<GemmConfig> gemm_unaligned_candidates(const Hardware& hw, MatrixPrecision precision) {
  CandidateList list(hw, precision);
  const MatrixInstruction* warp_matrix = nullptr;
  bool tma_fed = false;
  for (const MatrixInstruction& mi : hw.matrix_instructions) {
    if (mi.precision != precision) continue;
    if (mi.scope != IssueScope::warp) tma_fed = true;
    if (mi.scope == IssueScope::warp && mi.m > 1 && !warp_matrix) warp_matrix = &mi;
  }
  if (tma_fed && warp_matrix && hw.vendor == Vendor::nvidia) add_ampere(precision, *warp_matrix, list);
  return list.take();
}

}  // namespace hetrec::gemm_perf::gemm_perf
