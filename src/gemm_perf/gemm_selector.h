#pragma once
// Ranking and selecting GEMM configurations by the analytical model, with no runs.
//
// rank_configs predicts every candidate and sorts them. GemmSelector gives the same first
// choice in a few microseconds per new shape: at construction it computes every
// candidate's shape-independent traits once, groups candidates that differ only in launch
// order (their schedule is the same), and drops kernels that a deeper-pipelined twin
// listed earlier always beats. Per shape it bounds each group from below (first from the
// main-loop time of the busiest unit and the HBM floor alone, then from the whole schedule
// without the cache model) and fully predicts only the groups that can still win.
#include <array>
#include <cstddef>
#include <map>
#include <span>
#include <vector>

#include "hw/hardware.h"
#include "gemm_perf/gemm_config.h"
#include "gemm_perf/gemm_model.h"
#include "gemm_perf/gemm_model_params.h"
#include "gemm_perf/gemm_problem.h"

namespace hetrec::inline gemm_perf {

struct RankedConfig {
  GemmConfig config;
  GemmEstimate estimate;
  std::size_t candidate_index = 0;  // position in the candidate list it came from
};

// All candidates that can run the problem, fastest first; ties keep candidate order.
std::vector<RankedConfig> rank_configs(const Hardware& hw, const GemmProblem& problem,
                                       std::span<const GemmConfig> candidates,
                                       const GemmModelParams& params = GemmModelParams{});

class GemmSelector {
 public:
  // `candidates` may mix precisions; each is considered for the problems of the precision
  // it can run. `unaligned_extra` are considered only for problems whose operands' rows are
  // aligned to fewer than 16 bytes (gemm_unaligned_candidates), beside the candidates that
  // can load them.
  GemmSelector(Hardware hw, GemmModelParams params, std::vector<GemmConfig> candidates,
               std::vector<GemmConfig> unaligned_extra = {});
  // Candidates of gemm_candidates() and gemm_unaligned_candidates() for every precision the
  // GPU has.
  static GemmSelector for_hardware(const Hardware& hw, const GemmModelParams& params);

  // The configuration rank_configs would put first (same time; the same config unless two
  // tie exactly). Throws ConfigError when no candidate can run the problem.
  RankedConfig select(const GemmProblem& problem) const;

  const Hardware& hardware() const { return hw_; }
  const GemmModelParams& params() const { return params_; }
  const std::vector<GemmConfig>& candidates() const { return candidates_; }
  // Groups kept for a precision after dropping dominated kernels (for diagnostics).
  std::size_t group_count(MatrixPrecision p) const { return groups_[std::size_t(p)].groups.size(); }
  std::size_t unaligned_group_count(MatrixPrecision p) const {
    return unaligned_groups_[std::size_t(p)].groups.size();
  }

 private:
  struct Group {
    GemmKernelTraits traits;
    std::vector<std::size_t> members;  // candidate indices, ascending
  };
  struct TileClass {  // a tile edge with the cluster edge it is rounded up to
    double tile = 0.0, cluster = 1.0;
    bool operator==(const TileClass&) const = default;
  };
  // Kernels whose quick bound shares its tile counts, work split, reduction and HBM floor
  // for every shape: the same tile classes, decomposition and CTAs per unit. Per shape these
  // terms are computed once per class, not once per kernel.
  struct ScheduleClass {
    std::size_t m_class = 0, n_class = 0, k_class = 0;
    GemmDecomposition decomposition = GemmDecomposition::data_parallel;
    double split_k = 1.0;
    GemmReduction reduction = GemmReduction::workspace_fp32;
    double tile_elements = 0.0;  // tile_m x tile_n
    double ctas_per_unit = 1.0;
    double units = 0.0;  // the units the grid can use at once (Hardware::units_for_clusters)
    bool operator==(const ScheduleClass&) const = default;
  };
  // What the quick bound reads of one group, kept contiguous (the loop over groups is the
  // selector's hot path).
  struct QuickBoundTerms {
    std::size_t schedule_class = 0;
    double fill_us = 0.0, iter_us = 0.0, setup_us = 0.0;
    double exposed_overhead = 0.0;  // share of a tile's fill + epilogue left exposed
    bool k_major_only = false;
  };
  struct PrecisionGroups {
    std::vector<Group> groups;
    std::vector<QuickBoundTerms> quick;  // one per group, same order
    std::vector<TileClass> m_classes, n_classes, k_classes;
    std::vector<ScheduleClass> schedule_classes;
  };
  void add_quick_bound_classes(PrecisionGroups& pg);
  // The groups of candidates_[0, count) that precision `p` can run; with `unaligned`, only
  // the kernels that load operands of any alignment (gemm_alignment_block). `known`: the
  // traits computed so far, by kernel (gemm_selector.cpp's kernel_key).
  PrecisionGroups build_groups(MatrixPrecision p, std::size_t count, bool unaligned,
                               std::map<std::array<int, 15>, GemmKernelTraits>& known);

  Hardware hw_;
  GemmModelParams params_;
  std::vector<GemmConfig> candidates_;  // the candidates, then the unaligned extra ones
  PrecisionGroups groups_[std::size(kAllMatrixPrecisions)];
  PrecisionGroups unaligned_groups_[std::size(kAllMatrixPrecisions)];
};

// One-off selection over an explicit candidate list (builds a GemmSelector).
RankedConfig select_config(const Hardware& hw, const GemmProblem& problem,
                           std::span<const GemmConfig> candidates,
                           const GemmModelParams& params = GemmModelParams{});

}  // namespace hetrec::gemm_perf::gemm_perf
