#include "gemm_perf/gemm_oracle_measurements.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include "core/error.h"
#include "gemm_perf/gemm_model.h"

namespace hetrec::inline gemm_perf {
namespace {

// Bytes of K one shared-memory stage holds when the library does not say: 128 bytes of each
// operand row, the swizzle width of Hopper's TMA loads (CUTLASS sm90 kernels' tile K).
constexpr int kAutoStageKBytes = 128;
// Consumer warpgroups per CTA of the library's Hopper kernels: at most two (CUTLASS's
// cooperative kernels), splitting the tile's rows (256-row tiles give each 128) or, when
// the rows are an odd number of instructions (192, 320), its columns.
constexpr int kMaxConsumerWarpgroups = 2;
// Ampere-generation (CUTLASS sm80) warp tiles: at most 64 x 64 outputs per warp, and tiles of
// 64 or more rows (columns) spread over at least two warps along that side (4 warps per CTA
// for 64x64 to 128x128 tiles, 8 for 128x256 and 256x128).
constexpr int kMmaMaxWarpTile = 64;
constexpr int kMmaMinWarpsPerSide = 2;
// SIMT warp layout: warps of 32 x 32 outputs, at most 4 x 2 of them (CUTLASS SIMT kernels:
// 128 or 256 threads per CTA).
constexpr int kSimtWarpTile = 32;
constexpr int kSimtMaxWarpsM = 4, kSimtMaxWarpsN = 2;
// Deepest pipeline tried when the library leaves a warpgroup kernel's stage count to the
// kernel (CUTLASS 3's StageCountAuto fills the shared memory left after the epilogue).
constexpr int kMaxAutoStages = 8;
// Stages of an Ampere-generation or SIMT kernel whose stage count the library does not name:
// CUTLASS 2's default for sm80 (DefaultGemmConfiguration<OpClassTensorOp, Sm80>::kStages),
// not the deepest pipeline that fits, which predicted such kernels up to 3x too fast.
constexpr int kUnnamedMmaStages = 3;
// Cluster shapes a Hopper kernel with an automatic cluster is assumed to choose among
// (CUTLASS sm90 kernels' usual 1x1, 2x1 and 1x2).
constexpr int kAutoClusters[][2] = {{1, 1}, {2, 1}, {1, 2}};
// Launch order of the library's kernels in its frame: CUTLASS 2.x threadblock swizzles put
// blockIdx.x, the fastest-launched index, along the output's M tiles. The Hopper kernels'
// persistent tile scheduler picks the order per shape, so both are offered for those.
constexpr GemmRaster kLibraryRaster = GemmRaster::along_m;
// cuBLASLt reduction-scheme bits (cublasLtReductionScheme_t): in place in the output, or
// through a workspace in the compute type or in the output type.
constexpr int kSchemeInPlace = 1;
constexpr int kSchemeOutputType = 4;

bool is_auto_stage(const OracleCandidate& c) { return c.config.tile_k > 0 && c.config.stages <= 0; }

const MatrixInstruction* instruction_for(const Hardware& hw, MatrixPrecision p, LibraryKernelKind kind) {
  for (const MatrixInstruction& i : hw.matrix_instructions) {
    if (i.precision != p) continue;
    const bool simt = i.scope == IssueScope::warp && i.m == 1;
    switch (kind) {
      case LibraryKernelKind::simt:
        if (simt) return &i;
        break;
      case LibraryKernelKind::hopper_warpgroup:
        if (i.scope == IssueScope::warpgroup) return &i;
        break;
      case LibraryKernelKind::ampere_mma:
        if (i.scope == IssueScope::warp && !simt) return &i;
        break;
    }
  }
  return nullptr;
}

// Warps along one side of an Ampere-generation tile.
int mma_warps(int tile) {
  if (tile < kMmaMaxWarpTile) return 1;
  return std::max(kMmaMinWarpsPerSide, tile / kMmaMaxWarpTile);
}

// Stages of `c` that fit: the given count, or the deepest pipeline when the kernel chooses.
bool settle_stages(const Hardware& hw, MatrixPrecision precision, int stages_given, GemmConfig& c,
                   std::string& reason) {
  for (int stages = stages_given > 0 ? stages_given : kMaxAutoStages; stages >= 1; --stages) {
    c.stages = stages;
    const GemmKernelTraits t = gemm_kernel_traits(hw, GemmModelParams{}, precision, c);
    if (t.feasible) return true;
    reason = t.infeasible_reason;
    if (stages_given > 0) break;
  }
  return false;
}

// The split-K reduction a cuBLASLt scheme bit names (docs/perf_model.md, the oracle file).
GemmReduction reduction_of(int scheme) {
  switch (scheme) {
    case kSchemeInPlace:
      return GemmReduction::in_place;
    case kSchemeOutputType:
      return GemmReduction::workspace_output;
    default:  // compute type (fp32 accumulation) or none
      return GemmReduction::workspace_fp32;
  }
}

// The configuration's decomposition, launch order and family on a kernel description.
void apply_settings(const OracleCandidate& cand, GemmConfig& c) {
  c.split_k = std::max(1, cand.split_k);
  c.decomposition = c.split_k > 1 ? GemmDecomposition::split_k : GemmDecomposition::data_parallel;
  c.reduction = c.split_k > 1 ? reduction_of(cand.reduction) : GemmReduction::workspace_fp32;
  c.swizzle = std::max(1, cand.config.swizzle);
  c.raster = kLibraryRaster;
  c.family = cand.algo_id;
  c.family_variant = cand.custom_option;
}

// A kernel description stripped of everything but its tile and pipeline (menu key).
GemmConfig bare_kernel(GemmConfig c) {
  c.split_k = 1;
  c.decomposition = GemmDecomposition::data_parallel;
  c.swizzle = 1;
  c.raster = GemmRaster::along_n;
  c.cluster_m = c.cluster_n = 1;
  c.family = -1;
  c.family_variant = 0;
  return c;
}

using KernelKey = std::tuple<int, int, int, int, int, int, int, int, int>;
KernelKey kernel_key(const GemmConfig& c) {
  return {c.tile_m, c.tile_n, c.tile_k, c.stages, c.inst_m, c.inst_n, c.inst_k, c.warps_m, c.warps_n};
}

using KernelMenu = std::map<KernelKey, GemmConfig>;

// A kernel that picks its own tile, as each feasible kernel of its menu with its own
// decomposition, launch order and family.
std::vector<GemmConfig> menu_configs(const Hardware& hw, MatrixPrecision precision, const OracleCandidate& cand,
                                     const KernelMenu& menu) {
  std::vector<GemmConfig> out;
  for (const auto& [key, bare] : menu) {
    GemmConfig a = bare;
    apply_settings(cand, a);
    if (gemm_kernel_traits(hw, GemmModelParams{}, precision, a).feasible) out.push_back(a);
  }
  return out;
}

}  // namespace

GemmProblem oracle_problem(const OracleShape& s) {
  GemmProblem p;
  p.m = s.m;
  p.n = s.n;
  p.k = s.k;
  p.trans_a = s.trans_a;
  p.trans_b = s.trans_b;
  const auto fail = [&](const std::string& what) {
    throw ConfigError("GEMM oracle shape '" + s.id + "': " + what);
  };
  if (s.precision == "fp32" || s.precision == "tf32") {
    p.a_type = p.b_type = DType::f32;
    p.allow_tf32 = s.precision == "tf32";
  } else if (s.precision == "bf16") {
    p.a_type = p.b_type = DType::bf16;
  } else if (s.precision == "fp16") {
    p.a_type = p.b_type = DType::f16;
  } else if (s.precision == "fp8" || s.precision == "fp8_e4m3") {
    p.a_type = p.b_type = DType::f8e4m3;
    p.fp8_scaling = Fp8Scaling::per_tensor;
  } else {
    fail("unknown precision '" + s.precision + "'");
  }
  if (s.d_type == "fp32" || s.d_type == "f32") p.c_type = DType::f32;
  else if (s.d_type == "bf16") p.c_type = DType::bf16;
  else if (s.d_type == "fp16" || s.d_type == "f16") p.c_type = DType::f16;
  else fail("unknown output type '" + s.d_type + "'");
  if (s.epilogue == "none") p.epilogue = GemmEpilogue::none;
  else if (s.epilogue == "bias") p.epilogue = GemmEpilogue::bias;
  else if (s.epilogue == "relu_bias" || s.epilogue == "bias_relu") p.epilogue = GemmEpilogue::bias_relu;
  else fail("unknown epilogue '" + s.epilogue + "'");
  validate_gemm_problem(p);
  return p;
}

GemmProblem library_frame(const GemmProblem& e) { return transposed_product(e); }

std::string_view library_kernel_kind_name(LibraryKernelKind kind) {
  switch (kind) {
    case LibraryKernelKind::simt:
      return "simt";
    case LibraryKernelKind::hopper_warpgroup:
      return "hopper_warpgroup";
    case LibraryKernelKind::ampere_mma:
      return "ampere_mma";
  }
  return "?";
}

LibraryKernelKind library_kernel_kind(const OracleCandidate& cand, const std::vector<int>& simt_families) {
  if (std::find(simt_families.begin(), simt_families.end(), cand.algo_id) != simt_families.end())
    return LibraryKernelKind::simt;
  if (is_auto_stage(cand)) return LibraryKernelKind::hopper_warpgroup;
  return LibraryKernelKind::ampere_mma;
}

bool oracle_model_config(const Hardware& hw, const GemmProblem& problem, const OracleCandidate& cand,
                         LibraryKernelKind kind, GemmConfig& c, std::vector<GemmConfig>& alternatives,
                         std::string& reason, bool* transposed) {
  alternatives.clear();
  if (transposed) *transposed = false;
  const MatrixPrecision precision = gemm_precision(problem, hw);
  // SIMT kernels on other operand types issue the fp32 FMA (GemmKernelTraits::pipe).
  const MatrixPrecision pipe = kind == LibraryKernelKind::simt ? MatrixPrecision::fp32 : precision;
  const MatrixInstruction* inst = instruction_for(hw, pipe, kind);
  if (!inst) {
    reason = "no " + std::string(library_kernel_kind_name(kind)) + " instruction for the precision";
    return false;
  }
  if (cand.config.tile_m <= 0 || cand.config.tile_n <= 0) {
    reason = "tile chosen inside the library";
    return false;
  }
  c = GemmConfig{};
  c.tile_m = cand.config.tile_m;
  c.tile_n = cand.config.tile_n;
  const int operand_bytes = static_cast<int>(dtype_size(problem.a_type));
  c.tile_k = cand.config.tile_k > 0 ? cand.config.tile_k : kAutoStageKBytes / operand_bytes;
  apply_settings(cand, c);
  switch (kind) {
    case LibraryKernelKind::hopper_warpgroup: {
      int cluster_m = cand.config.cluster_m, cluster_n = cand.config.cluster_n;
      if (c.tile_m % inst->m != 0 && transposed && c.tile_n % inst->m == 0) {
        // Rows fewer than (or not a multiple of) the instruction's M, columns a multiple: the
        // kernel computes the transposed product, its tile's columns along the instruction.
        std::swap(c.tile_m, c.tile_n);
        std::swap(cluster_m, cluster_n);
        *transposed = true;
      }
      if (c.tile_m % inst->m != 0) {
        reason = "tile rows not a multiple of the warpgroup instruction's " + std::to_string(inst->m);
        return false;
      }
      // Two consumer warpgroups where the tile splits into whole instruction rows (along M)
      // or else into two halves an instruction width covers (along N), one otherwise.
      const int row_blocks = c.tile_m / inst->m;
      int groups_m = 1, groups_n = 1;
      if (row_blocks % kMaxConsumerWarpgroups == 0) groups_m = kMaxConsumerWarpgroups;
      else if (row_blocks > 1 && c.tile_n % kMaxConsumerWarpgroups == 0 &&
               c.tile_n / kMaxConsumerWarpgroups >= inst->n_min)
        groups_n = kMaxConsumerWarpgroups;
      const int group_n = c.tile_n / groups_n;
      int n = std::min(group_n, inst->n_max);
      while (n >= inst->n_min && (!inst->allows_n(n) || group_n % n != 0)) n -= inst->n_step;
      if (n < inst->n_min) {
        reason = "no instruction width divides the tile's " + std::to_string(c.tile_n) + " columns";
        return false;
      }
      c.inst_m = inst->m;
      c.inst_n = n;
      c.inst_k = inst->k;
      c.warps_m = kWarpsPerWarpgroup * groups_m;
      c.warps_n = groups_n;
      c.cluster_m = std::max(1, cluster_m);
      c.cluster_n = std::max(1, cluster_n);
      break;
    }
    case LibraryKernelKind::ampere_mma: {
      c.warps_m = mma_warps(c.tile_m);
      c.warps_n = mma_warps(c.tile_n);
      if (c.tile_m % (c.warps_m * inst->m) != 0 || c.tile_n % (c.warps_n * inst->n_min) != 0) {
        reason = "tile " + std::to_string(c.tile_m) + "x" + std::to_string(c.tile_n) +
                 " does not divide into warp tiles of the warp-level instruction";
        return false;
      }
      c.inst_m = inst->m;
      c.inst_n = inst->n_min;
      c.inst_k = inst->k;
      break;
    }
    case LibraryKernelKind::simt: {
      c.inst_m = c.inst_n = c.inst_k = 1;
      c.warps_m = std::clamp(c.tile_m / kSimtWarpTile, 1, kSimtMaxWarpsM);
      c.warps_n = std::clamp(c.tile_n / kSimtWarpTile, 1, kSimtMaxWarpsN);
      break;
    }
  }
  if (c.tile_k % c.inst_k != 0) c.tile_k = ((c.tile_k + c.inst_k - 1) / c.inst_k) * c.inst_k;
  const int stages = cand.config.stages > 0 || kind == LibraryKernelKind::hopper_warpgroup ? cand.config.stages
                                                                                            : kUnnamedMmaStages;
  if (!settle_stages(hw, precision, stages, c, reason)) return false;
  if (kind == LibraryKernelKind::hopper_warpgroup) {
    // The kernel's own choices, modelled as the best of the options: the launch order, and
    // the cluster shape when it is automatic.
    std::vector<std::pair<int, int>> clusters = {{c.cluster_m, c.cluster_n}};
    if (cand.config.cluster_m <= 0) {
      clusters.clear();
      for (const auto& cl : kAutoClusters) clusters.emplace_back(cl[0], cl[1]);
    }
    bool first = true;
    for (const auto& [cm, cn] : clusters) {
      for (GemmRaster raster : {GemmRaster::along_m, GemmRaster::along_n}) {
        GemmConfig a = c;
        a.cluster_m = cm, a.cluster_n = cn, a.raster = raster;
        if (!gemm_kernel_traits(hw, GemmModelParams{}, precision, a).feasible) continue;
        if (first) c = a, first = false;
        else alternatives.push_back(a);
      }
    }
  }
  return true;
}

OracleConversion oracle_measurements(const Hardware& hw, const GemmOracle& oracle) {
  OracleConversion out;
  const auto timed = [](const OracleShape& s) { return s.skipped.empty() && !s.candidates.empty(); };
  // Pass 1: the SIMT families, offered for fp32 compute.
  std::set<int> simt;
  for (const OracleShape& s : oracle.shapes)
    if (timed(s) && s.precision == "fp32")
      for (const OracleCandidate& c : s.candidates) simt.insert(c.algo_id);
  out.simt_families.assign(simt.begin(), simt.end());

  // Pass 2: every described kernel, and per kind (and, for tensor-core kinds, precision)
  // the menu of tiles and pipelines the library's kernels use.
  struct Described {
    bool ok = false;
    GemmConfig config;
    std::vector<GemmConfig> alternatives;
    bool transposed = false;
  };
  std::vector<std::vector<Described>> described(oracle.shapes.size());
  std::vector<GemmProblem> problems(oracle.shapes.size());
  std::map<std::pair<LibraryKernelKind, MatrixPrecision>, KernelMenu> menus;
  const auto menu_key = [&](LibraryKernelKind kind, MatrixPrecision p) {
    return std::make_pair(kind, kind == LibraryKernelKind::simt ? MatrixPrecision::fp32 : p);
  };
  for (std::size_t si = 0; si < oracle.shapes.size(); ++si) {
    const OracleShape& s = oracle.shapes[si];
    if (!timed(s)) continue;
    problems[si] = library_frame(oracle_problem(s));
    const MatrixPrecision precision = gemm_precision(problems[si], hw);
    described[si].resize(s.candidates.size());
    for (std::size_t ci = 0; ci < s.candidates.size(); ++ci) {
      const OracleCandidate& c = s.candidates[ci];
      if (!(c.median_us > 0.0)) continue;
      Described& d = described[si][ci];
      std::string reason;
      const LibraryKernelKind kind = library_kernel_kind(c, out.simt_families);
      d.ok = oracle_model_config(hw, problems[si], c, kind, d.config, d.alternatives, reason, &d.transposed);
      if (d.ok && !d.transposed) {
        const GemmConfig bare = bare_kernel(d.config);
        menus[menu_key(kind, precision)].emplace(kernel_key(bare), bare);
      }
    }
  }

  // Pass 3: the measured shapes; kernels that pick their own tile run as the menu.
  for (std::size_t si = 0; si < oracle.shapes.size(); ++si) {
    const OracleShape& s = oracle.shapes[si];
    if (!timed(s)) {
      ++out.skipped_shapes;
      continue;
    }
    MeasuredShape m;
    m.id = s.id;
    m.problem = problems[si];
    m.heuristic_us = s.heuristic_median_us;
    const MatrixPrecision precision = gemm_precision(m.problem, hw);
    double best_all = std::numeric_limits<double>::infinity(), best_described = best_all;
    for (std::size_t ci = 0; ci < s.candidates.size(); ++ci) {
      const OracleCandidate& c = s.candidates[ci];
      ++out.candidates;
      best_all = std::min(best_all, c.median_us);
      const Described& d = described[si][ci];
      MeasuredCandidate mc{c.key, d.config, c.median_us, d.alternatives, d.transposed};
      if (!d.ok && c.median_us > 0.0 && (c.config.tile_m <= 0 || c.config.tile_n <= 0)) {
        const LibraryKernelKind kind = library_kernel_kind(c, out.simt_families);
        const auto menu = menus.find(menu_key(kind, precision));
        if (menu != menus.end()) {
          mc.alternatives = menu_configs(hw, precision, c, menu->second);
          if (!mc.alternatives.empty()) {
            mc.config = mc.alternatives.front();
            mc.alternatives.erase(mc.alternatives.begin());
            ++out.kernel_chosen_tiles;
            best_described = std::min(best_described, c.median_us);
            m.candidates.push_back(std::move(mc));
            continue;
          }
        }
      }
      if (!d.ok) {
        ++out.undescribed;
        continue;
      }
      best_described = std::min(best_described, c.median_us);
      m.candidates.push_back(std::move(mc));
    }
    const double best_candidate = best_all;
    if (s.heuristic_median_us > 0.0) best_all = std::min(best_all, s.heuristic_median_us);
    // The heuristic's algorithms timed as it returned them are measured times of the shape too.
    for (const OracleCandidate& r : s.returned)
      if (r.median_us > 0.0) best_all = std::min(best_all, r.median_us);
    if (m.candidates.empty()) {
      ++out.undescribed_shapes;
      continue;
    }
    m.best_measured_us = best_all;
    if (best_candidate < best_described) ++out.oracle_undescribed;
    if (best_all < best_candidate) ++out.heuristic_faster;
    out.shapes.push_back(std::move(m));
  }
  return out;
}

}  // namespace hetrec::gemm_perf::gemm_perf

namespace hetrec::inline gemm_perf {

std::vector<std::optional<DescribedLibraryConfig>> describe_library_configs(
    const Hardware& hw, const GemmProblem& problem, const std::vector<OracleCandidate>& candidates,
    const std::vector<int>& simt_families) {
  const MatrixPrecision precision = gemm_precision(problem, hw);
  std::vector<std::optional<DescribedLibraryConfig>> out(candidates.size());
  std::map<LibraryKernelKind, KernelMenu> menus;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const LibraryKernelKind kind = library_kernel_kind(candidates[i], simt_families);
    DescribedLibraryConfig d;
    std::string reason;
    if (!oracle_model_config(hw, problem, candidates[i], kind, d.config, d.alternatives, reason, &d.transposed))
      continue;
    if (!d.transposed) {
      const GemmConfig bare = bare_kernel(d.config);
      menus[kind].emplace(kernel_key(bare), bare);
    }
    out[i] = std::move(d);
  }
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const OracleCandidate& c = candidates[i];
    if (out[i] || (c.config.tile_m > 0 && c.config.tile_n > 0)) continue;
    const auto menu = menus.find(library_kernel_kind(c, simt_families));
    if (menu == menus.end()) continue;
    std::vector<GemmConfig> configs = menu_configs(hw, precision, c, menu->second);
    if (configs.empty()) continue;
    DescribedLibraryConfig d;
    d.config = configs.front();
    d.alternatives.assign(configs.begin() + 1, configs.end());
    out[i] = std::move(d);
  }
  return out;
}

}  // namespace hetrec::gemm_perf::gemm_perf
