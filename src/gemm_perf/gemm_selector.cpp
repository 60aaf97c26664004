#include "gemm_perf/gemm_selector.h"

#include <algorithm>
#include <cmath>
#include <array>
#include <limits>
#include <map>
#include <memory>

#include "core/error.h"
#include "gemm_perf/gemm_candidates.h"

namespace hetrec::inline gemm_perf {

namespace {

// Everything but the launch order: candidates equal in this share one schedule.
// Everything but the launch order: candidates equal in this share one schedule. Twins,
// which may dominate each other, share it without the pipeline depth and kernel family.
using KernelKey = std::array<int, 15>;
KernelKey kernel_key(const GemmConfig& c) {
  return {c.tile_m,    c.tile_n,    c.tile_k,
          c.inst_m,    c.inst_n,    c.inst_k,
          c.warps_m,   c.warps_n,   c.stages,
          c.cluster_m, c.cluster_n, int(c.decomposition),
          c.split_k,   int(c.reduction), c.family};
}
KernelKey twin_key(const GemmConfig& c) {
  KernelKey k = kernel_key(c);
  k[8] = 0;   // stages
  k[14] = 0;  // family
  return k;
}

// Whether kernel `a` is at least as fast as its twin `b` on every shape: the same
// occupancy, start-up and fill, and no main-loop bound larger (the shape scales each bound
// of both by the same factors, the residency and issue share being equal).
bool never_slower(const GemmKernelTraits& a, const GemmKernelTraits& b) {
  return a.ctas_per_unit == b.ctas_per_unit && a.setup_us == b.setup_us && a.fill_us == b.fill_us &&
         a.k_major_only == b.k_major_only && a.iter_math_us <= b.iter_math_us &&
         a.iter_feed_us <= b.iter_feed_us && a.iter_l2_us <= b.iter_l2_us &&
         a.iter_latency_us <= b.iter_latency_us;
}

bool same_launch_order(const GemmConfig& a, const GemmConfig& b) {
  return a.raster == b.raster && a.swizzle == b.swizzle && a.xcd_remap == b.xcd_remap;
}

constexpr std::size_t kInfeasible = std::numeric_limits<std::size_t>::max();
// Problem extents up to which the quick bound's double arithmetic is exact: tile counts
// times K iterations stay below 2^53 with a wide margin.
constexpr int64_t kQuickBoundLimit = int64_t(1) << 31;
// The quick bound recomputes the unit and reduction times in another order than
// schedule_gemm; shaving a relative 1e-9 off them keeps it below the exact value whatever
// the rounding. The HBM floor and the launch are the very same numbers (so a group tied
// at the floor is pruned by the tie rule).
constexpr double kQuickBoundSlack = 1.0 - 1e-9;
// Candidates listed after the best so far are not examined when their bound is within
// this relative distance of it: near-ties (many launch orders or pipeline depths of a
// memory-bound kernel predict the same time) would otherwise all be evaluated. The choice
// is then at most this much slower than rank_configs' first, in the model's own terms.
constexpr double kTieTolerance = 1e-8;

// ceil() of a non-negative double below 2^63, without a libm call (x86-64's baseline
// lacks a rounding instruction, and this loop runs hundreds of times per shape).
double ceil_nonnegative(double x) {
  const double truncated = double(int64_t(x));
  return truncated < x ? truncated + 1.0 : truncated;
}

bool better(double time, std::size_t index, const RankedConfig& best) {
  return time < best.estimate.time_us || (time == best.estimate.time_us && index < best.candidate_index);
}

}  // namespace

std::vector<RankedConfig> rank_configs(const Hardware& hw, const GemmProblem& problem,
                                       std::span<const GemmConfig> candidates,
                                       const GemmModelParams& params) {
  validate_gemm_problem(problem);
  const MatrixPrecision precision = gemm_precision(problem, hw);
  std::vector<RankedConfig> ranked;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const GemmKernelTraits traits = gemm_kernel_traits(hw, params, precision, candidates[i]);
    if (!traits.feasible || !gemm_alignment_block(problem, traits).empty()) continue;
    const GemmSchedule schedule = schedule_gemm(hw, params, problem, candidates[i], traits);
    ranked.push_back(
        {candidates[i], finish_gemm_estimate(hw, params, problem, candidates[i], traits, schedule), i});
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const RankedConfig& a, const RankedConfig& b) {
    return a.estimate.time_us < b.estimate.time_us;
  });
  return ranked;
}

GemmSelector::GemmSelector(Hardware hw, GemmModelParams params, std::vector<GemmConfig> candidates,
                           std::vector<GemmConfig> unaligned_extra)
    : hw_(std::move(hw)), params_(std::move(params)), candidates_(std::move(candidates)) {
  const std::size_t aligned_count = candidates_.size();
  candidates_.insert(candidates_.end(), unaligned_extra.begin(), unaligned_extra.end());
  for (MatrixPrecision p : kAllMatrixPrecisions) {
    if (hw_.dense_tflops_for(p) <= 0.0) continue;
    std::map<KernelKey, GemmKernelTraits> traits;  // computed once for both group sets
    groups_[std::size_t(p)] = build_groups(p, aligned_count, false, traits);
    unaligned_groups_[std::size_t(p)] = build_groups(p, candidates_.size(), true, traits);
  }
}

GemmSelector::PrecisionGroups GemmSelector::build_groups(MatrixPrecision p, std::size_t count, bool unaligned,
                                                         std::map<std::array<int, 15>, GemmKernelTraits>& known) {
  std::vector<Group> groups;
  std::map<KernelKey, std::size_t> index_of;
  for (std::size_t i = 0; i < count; ++i) {
    const KernelKey key = kernel_key(candidates_[i]);
    auto it = index_of.find(key);
    if (it == index_of.end()) {
      auto cached = known.find(key);
      if (cached == known.end()) cached = known.emplace(key, gemm_kernel_traits(hw_, params_, p, candidates_[i])).first;
      GemmKernelTraits traits = cached->second;
      if (!traits.feasible || (unaligned && !traits.warp_scope)) {
        index_of.emplace(key, kInfeasible);
        continue;
      }
      it = index_of.emplace(key, groups.size()).first;
      Group group;
      group.traits = std::move(traits);
      groups.push_back(std::move(group));
    }
    if (it->second != kInfeasible) groups[it->second].members.push_back(i);
  }
  // Drop a kernel when an earlier-listed twin (another pipeline depth or kernel family of
  // the same tile, decomposition and instruction) is never slower, offering each of its
  // launch orders at a smaller index: it can then never be the (earliest) fastest one.
  std::map<KernelKey, std::vector<std::size_t>> twins;
  std::vector<bool> dominated(groups.size(), false);
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const GemmConfig& mine = candidates_[groups[g].members.front()];
    std::vector<std::size_t>& earlier = twins[twin_key(mine)];
    for (std::size_t e : earlier) {
      if (dominated[e]) continue;
      const Group& other = groups[e];
      if (!never_slower(other.traits, groups[g].traits)) continue;
      const bool covers =
          std::all_of(groups[g].members.begin(), groups[g].members.end(), [&](std::size_t m) {
            return std::any_of(other.members.begin(), other.members.end(), [&](std::size_t o) {
              return o < m && same_launch_order(candidates_[o], candidates_[m]);
            });
          });
      if (covers) {
        dominated[g] = true;
        break;
      }
    }
    earlier.push_back(g);
  }
  PrecisionGroups pg;
  for (std::size_t g = 0; g < groups.size(); ++g)
    if (!dominated[g]) pg.groups.push_back(std::move(groups[g]));
  add_quick_bound_classes(pg);
  return pg;
}

void GemmSelector::add_quick_bound_classes(PrecisionGroups& pg) {
  auto class_of = []<typename T>(std::vector<T>& classes, const T& c) {
    auto it = std::find(classes.begin(), classes.end(), c);
    if (it != classes.end()) return std::size_t(it - classes.begin());
    classes.push_back(c);
    return classes.size() - 1;
  };
  for (const Group& g : pg.groups) {
    const GemmConfig& c = candidates_[g.members.front()];
    ScheduleClass sc;
    sc.m_class = class_of(pg.m_classes, TileClass{double(c.tile_m), double(c.cluster_m)});
    sc.n_class = class_of(pg.n_classes, TileClass{double(c.tile_n), double(c.cluster_n)});
    sc.k_class = class_of(pg.k_classes, TileClass{double(c.tile_k), 1.0});
    sc.decomposition = c.decomposition;
    sc.split_k = double(c.split_k);
    sc.reduction = c.reduction;
    sc.tile_elements = double(c.tile_m) * c.tile_n;
    sc.ctas_per_unit = double(g.traits.ctas_per_unit);
    sc.units = double(hw_.units_for_clusters(c.cluster_m * c.cluster_n, g.traits.ctas_per_unit));
    QuickBoundTerms q;
    q.schedule_class = class_of(pg.schedule_classes, sc);
    q.fill_us = g.traits.fill_us;
    q.iter_us = g.traits.iter_us;
    q.setup_us = g.traits.setup_us;
    q.exposed_overhead = params_.tile_overhead_exposure / g.traits.ctas_per_unit;
    q.k_major_only = g.traits.k_major_only;
    pg.quick.push_back(q);
  }
}

GemmSelector GemmSelector::for_hardware(const Hardware& hw, const GemmModelParams& params) {
  std::vector<GemmConfig> all, unaligned;
  for (MatrixPrecision p : kAllMatrixPrecisions) {
    if (hw.dense_tflops_for(p) <= 0.0) continue;
    std::vector<GemmConfig> mine = gemm_candidates(hw, p);
    all.insert(all.end(), mine.begin(), mine.end());
    std::vector<GemmConfig> narrow = gemm_unaligned_candidates(hw, p);
    unaligned.insert(unaligned.end(), narrow.begin(), narrow.end());
  }
  return GemmSelector(hw, params, std::move(all), std::move(unaligned));
}

RankedConfig GemmSelector::select(const GemmProblem& problem) const {
  validate_gemm_problem(problem);
  const MatrixPrecision precision = gemm_precision(problem, hw_);
  // Operands TMA cannot load: the kernels that load any alignment (gemm_alignment_block).
  const bool aligned = operands_fully_aligned(problem);
  const PrecisionGroups& pg = (aligned ? groups_ : unaligned_groups_)[std::size_t(precision)];
  const std::vector<Group>& groups = pg.groups;
  if (groups.empty())
    throw ConfigError("GEMM " + describe_gemm_problem(problem) + ": no candidate configuration runs " +
                      std::string(precision_name(precision)) + (aligned ? "" : " on operands of this alignment") +
                      " on " + hw_.name);

  // Pass 1, quick bound per group: launch + max(time of the busiest unit, HBM floor) +
  // split-K reduction + operand transposes, leaving out only terms that can only add. It
  // redoes schedule_gemm's integer arithmetic in doubles from per-shape tables of tile
  // counts; doubles are exact while the counts stay far below 2^53, and beyond
  // kQuickBoundLimit the bound is skipped (0 prunes nothing).
  const double batch = double(problem.batch);
  const bool quick = problem.m <= kQuickBoundLimit && problem.n <= kQuickBoundLimit &&
                     problem.k <= kQuickBoundLimit && problem.batch <= kQuickBoundLimit;
  const double bytes = precision_operand_bytes(precision);
  const double hbm_bytes_per_us = gemm_hbm_bytes_per_us(hw_, params_);
  const double floor_us = gemm_compulsory_bytes(problem, bytes, bytes) / hbm_bytes_per_us;
  const double launch_us = params_.launch_overhead_us;
  // Split-K reduction kernel: fp32 partials per slice plus the output, and its launch.
  const double mn = batch * double(problem.m) * double(problem.n);
  const double c_bytes = double(dtype_size(problem.c_type));
  const double output_bytes = c_bytes * (problem.accumulate ? 2.0 : 1.0);  // per element, read C + write D
  const double split_k_partials_us = mn * kAccumulatorBytes / hbm_bytes_per_us;  // fp32 partials
  const double split_k_output_partials_us = mn * c_bytes / hbm_bytes_per_us;      // in the output type
  const double split_k_output_us = mn * output_bytes / hbm_bytes_per_us + launch_us;
  const double outputs_us = mn * output_bytes / hbm_bytes_per_us;
  // Transposes that K-major-only instructions need for this layout (read + write each).
  double transpose_us = 0.0;
  if (problem.trans_a)
    transpose_us +=
        2.0 * batch * double(problem.m) * double(problem.k) * bytes / hbm_bytes_per_us + launch_us;
  if (!problem.trans_b)
    transpose_us +=
        2.0 * batch * double(problem.k) * double(problem.n) * bytes / hbm_bytes_per_us + launch_us;
  const double operands_us =
      batch * double(problem.k) * (double(problem.m) + double(problem.n)) * bytes / hbm_bytes_per_us;
  // Per shape and schedule class: the busiest unit's K iterations and tiles, the store
  // term of a tile's overhead, the split-K reduction and the floor.
  struct ClassTerms {
    double busiest_iters = 0.0, busiest_tiles = 0.0, store_us = 0.0, reduction_us = 0.0, floor_us = 0.0;
  };
  const std::size_t tile_classes = pg.m_classes.size() + pg.n_classes.size() + pg.k_classes.size();
  const auto scratch = std::make_unique_for_overwrite<double[]>(tile_classes + groups.size());
  const auto class_terms = std::make_unique_for_overwrite<ClassTerms[]>(pg.schedule_classes.size());
  double* tiles_m = scratch.get();
  double* tiles_n = tiles_m + pg.m_classes.size();
  double* k_iters = tiles_n + pg.n_classes.size();
  double* bound = k_iters + pg.k_classes.size();
  auto tiles_along = [](double extent, const TileClass& c) {
    return ceil_nonnegative(ceil_nonnegative(extent / c.tile) / c.cluster) * c.cluster;
  };
  const double xcds = double(hw_.xcds);
  if (quick) {
    for (std::size_t i = 0; i < pg.m_classes.size(); ++i)
      tiles_m[i] = tiles_along(double(problem.m), pg.m_classes[i]);
    for (std::size_t i = 0; i < pg.n_classes.size(); ++i)
      tiles_n[i] = tiles_along(double(problem.n), pg.n_classes[i]);
    for (std::size_t i = 0; i < pg.k_classes.size(); ++i)
      k_iters[i] = ceil_nonnegative(double(problem.k) / pg.k_classes[i].tile);
    for (std::size_t i = 0; i < pg.schedule_classes.size(); ++i) {
      const ScheduleClass& sc = pg.schedule_classes[i];
      ClassTerms& ct = class_terms[i];
      const double tiles = tiles_m[sc.m_class] * tiles_n[sc.n_class] * batch;
      const double iters = k_iters[sc.k_class];
      const double units = sc.units, units_per_xcd = std::floor(sc.units / xcds);
      double work = 0.0, out_bytes = output_bytes;
      ct.floor_us = floor_us;
      if (sc.decomposition == GemmDecomposition::stream_k) {
        ct.busiest_iters = ceil_nonnegative(tiles * iters / units);
        work = std::min(units * sc.ctas_per_unit, tiles * iters);
        ct.busiest_tiles = std::min(tiles, ceil_nonnegative(tiles / units) + 1.0);
        if (tiles != double(int64_t(tiles / work)) * work) {
          // Tiles cut between CTAs pass fp32 partials through memory.
          const double fixup_bytes = std::min(tiles, work) * 2.0 * sc.tile_elements * kAccumulatorBytes;
          ct.floor_us = std::max(floor_us,
                                 (operands_us + outputs_us + fixup_bytes / hbm_bytes_per_us) * kQuickBoundSlack);
        }
      } else {
        const double slices = sc.decomposition == GemmDecomposition::split_k ? sc.split_k : 1.0;
        work = tiles * slices;
        ct.busiest_tiles = ceil_nonnegative(ceil_nonnegative(work / xcds) / units_per_xcd);
        ct.busiest_iters = ct.busiest_tiles * ceil_nonnegative(iters / slices);
        if (slices > 1.0 && sc.reduction != GemmReduction::in_place) {
          const bool fp32 = sc.reduction == GemmReduction::workspace_fp32;
          const double partials_us = fp32 ? split_k_partials_us : split_k_output_partials_us;
          out_bytes = fp32 ? kAccumulatorBytes : c_bytes;
          // The GEMM itself reads A and B at least once and writes partials per slice.
          ct.floor_us = std::max(floor_us, (operands_us + partials_us * slices) * kQuickBoundSlack);
          ct.reduction_us = partials_us * slices + split_k_output_us;
        }
      }
      // The output store of a tile (its epilogue's vector operations and stream-K fixups
      // only add to this).
      ct.store_us = sc.tile_elements * out_bytes * std::min(units, work) / hbm_bytes_per_us;
    }
  }
  std::size_t first = 0;
  double first_bound = std::numeric_limits<double>::infinity();
  for (std::size_t g = 0; g < groups.size(); ++g) {
    if (quick) {
      const QuickBoundTerms& q = pg.quick[g];
      const ClassTerms& ct = class_terms[q.schedule_class];
      // Each tile's pipeline fill and output store, as much as is left exposed.
      const double per_tile_us = q.fill_us + ct.store_us;
      const double overhead_us = (ct.busiest_tiles * q.exposed_overhead + (1.0 - q.exposed_overhead)) * per_tile_us;
      const double unit_us = ct.busiest_iters * q.iter_us + overhead_us;
      const double extra_us = q.setup_us + ct.reduction_us + (q.k_major_only ? transpose_us : 0.0);
      bound[g] = launch_us + std::max(unit_us * kQuickBoundSlack, ct.floor_us) + extra_us * kQuickBoundSlack;
    } else {
      bound[g] = 0.0;
    }
    if (bound[g] < first_bound) first_bound = bound[g], first = g;
  }

  RankedConfig best;
  best.estimate.time_us = std::numeric_limits<double>::infinity();
  best.candidate_index = std::numeric_limits<std::size_t>::max();
  auto cannot_win = [&](double lower_bound, const Group& group) {
    return lower_bound > best.estimate.time_us ||
           (lower_bound >= best.estimate.time_us * (1.0 - kTieTolerance) &&
            group.members.front() > best.candidate_index);
  };
  auto evaluate = [&](const Group& group) {
    const GemmConfig& kernel = candidates_[group.members.front()];
    const GemmSchedule s = schedule_gemm(hw_, params_, problem, kernel, group.traits);
    if (cannot_win(s.lower_bound_us, group)) return;  // pass 2's second, tighter bound
    for (std::size_t i : group.members) {
      const GemmEstimate e = finish_gemm_estimate(hw_, params_, problem, candidates_[i], group.traits, s);
      if (better(e.time_us, i, best)) best = {candidates_[i], e, i};
    }
  };
  // Pass 2: the most promising group first, then every group whose bounds can still win.
  evaluate(groups[first]);
  for (std::size_t g = 0; g < groups.size(); ++g)
    if (g != first && !cannot_win(bound[g], groups[g])) evaluate(groups[g]);
  return best;
}

RankedConfig select_config(const Hardware& hw, const GemmProblem& problem,
                           std::span<const GemmConfig> candidates, const GemmModelParams& params) {
  GemmSelector selector(hw, params, std::vector<GemmConfig>(candidates.begin(), candidates.end()));
  return selector.select(problem);
}

}  // namespace hetrec::gemm_perf::gemm_perf
