#include "tune/gate.h"

#include <algorithm>

#include "core/error.h"
#include "core/mix64.h"

namespace hetrec::tune {

std::string input_shape_name(InputShape s) {
  switch (s) {
    case InputShape::random: return "random";
    case InputShape::empty_bags: return "empty-bags";
    case InputShape::one_row_tables: return "one-row-tables";
    case InputShape::hot_rows: return "hot-rows";
  }
  return "unknown";
}

std::vector<VerificationSet> verification_sets(uint64_t base_seed, bool reads_bags) {
  std::vector<VerificationSet> sets;
  const auto add = [&](InputShape shape, const std::string& name) {
    // hash_combine is a bijection of the index for a fixed base: distinct seeds per set.
    sets.push_back({name, shape, hash_combine(base_seed, static_cast<uint64_t>(sets.size()) + 1)});
  };
  for (int i = 0; i < kRandomVerificationSets; ++i) add(InputShape::random, "random-" + std::to_string(i + 1));
  if (reads_bags)
    for (InputShape s : {InputShape::empty_bags, InputShape::one_row_tables, InputShape::hot_rows})
      add(s, input_shape_name(s));
  return sets;
}

std::vector<TableConfig> verification_tables(const std::vector<TableConfig>& tables, InputShape shape) {
  if (tables.empty()) throw ConfigError("tune: a verification set needs the workload's tables; there are none");
  std::vector<TableConfig> out = tables;
  for (std::size_t t = 0; t < out.size(); ++t) {
    TableConfig& c = out[t];
    c.rows = std::clamp<int64_t>(c.rows, 1, kVerificationMaxRows);
    switch (shape) {
      case InputShape::random: break;
      case InputShape::empty_bags:
        if (t % 2 == 0) {
          c.hotness = 0;
          c.variable_bags = false;
        }
        break;
      case InputShape::one_row_tables: c.rows = 1; break;
      case InputShape::hot_rows:
        c.rows = std::min(c.rows, kHotRows);
        c.hotness = std::max(c.hotness, kHotRowHotness);
        break;
    }
  }
  return out;
}

SetsVerdict verify_on_every_set(const std::vector<VerificationSet>& sets,
                                const std::function<SetCheck(const VerificationSet&)>& check) {
  if (sets.empty()) throw InternalError("tune gate: no verification set to check a candidate on");
  SetsVerdict v;
  v.sets_required = static_cast<int>(sets.size());
  for (const VerificationSet& s : sets) {
    const SetCheck c = check(s);
    v.max_abs_error = std::max(v.max_abs_error, c.max_abs_error);
    if (!c.ok) {
      v.reason = "input set " + s.name + " (" + std::to_string(v.sets_passed + 1) + " of " +
                 std::to_string(v.sets_required) + "): " + c.reason;
      return v;
    }
    ++v.sets_passed;
  }
  v.ok = true;
  return v;
}

bool Gate::record(const Attempt& a, const GateContext& ctx) {
  log_.append(a);
  if (a.verdict != Verdict::passed) return false;
  if (!a.compiled || !(a.time_us > 0.0))
    throw InternalError("tune gate: attempt '" + describe(a.params) + "' marked passed without compiling and timing");
  if (a.kernel != ctx.key.kernel || a.shape != ctx.key.shape || a.source_hash != ctx.key.source_hash)
    throw InternalError("tune gate: attempt for " + a.kernel + " [" + a.shape + "] recorded against " + ctx.key.kernel +
                        " [" + ctx.key.shape + "]");
  // A model-proposed source is kept only after every verification set passed.
  if (!ctx.kernel_header.empty() && (ctx.sets_required <= 0 || ctx.sets_passed != ctx.sets_required)) return false;
  // Not faster than the built-in kernel: the engine keeps the built-in one.
  if (ctx.default_us > 0.0 && a.time_us >= ctx.default_us) return false;
  Winner w;
  w.key = ctx.key;
  w.params = a.params;
  w.time_us = a.time_us;
  w.default_us = ctx.default_us;
  w.floor_us = ctx.floor_us;
  w.workload = ctx.workload;
  w.kernel_header = ctx.kernel_header;
  return store_.offer(w);
}

}  // namespace hetrec::tune
