#include "tune/gpu/kernel_search.h"

#include <algorithm>
#include <future>
#include <iomanip>
#include <map>
#include <random>
#include <sstream>

#include "core/error.h"
#include "kernels/rtc_sources.h"
#include "tunable/small_gemm/small_gemm_sources.h"
#include "tune/kernel_families.h"
#include "tune/llm_proposer.h"
#include "tune/occupancy.h"

namespace hetrec::tune {

std::string fmt_us(double us) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(1) << us << " us";
  return s.str();
}

uint64_t fresh_seed() {
  return std::random_device{}() ^ static_cast<uint64_t>(Clock::now().time_since_epoch().count());
}

namespace {

std::string embedded_text(const std::string& name) {
  for (const gpu::RtcHeader& h : kernels::rtc_source_files())
    if (h.name == name) return h.text;
  for (const gpu::RtcHeader& h : kernels::small_gemm_source_files())
    if (h.name == name) return h.text;
  throw InternalError("tune: no embedded source " + name);
}

std::string hardware_text(const Hardware& hw) {
  std::ostringstream s;
  s << hw.display_name << " (" << hw.arch << "): " << hw.compute_units << " SMs, warp " << hw.warp_size << ", "
    << hw.max_threads_per_unit << " threads/SM, " << hw.register_file_kb_per_unit << " KB registers/SM, "
    << hw.shared_kb_per_unit << " KB shared/SM, L2 " << hw.l2_mb << " MB, HBM " << hw.hbm_tbs << " TB/s";
  return s.str();
}
}  // namespace

// Proposes, compiles, checks, verifies, times and keeps, for one kernel and shape.
nlohmann::json search(const TuneOptions& o, const DeviceFacts& dev, const KernelProblem& k, WinnersStore& store,
                      AttemptLog& log, Clock::duration budget, std::ostream& progress) {
  // The budget is the search's: the caller's preparation of the workload and timing of the
  // built-in kernel (k.default_us) came before it.
  const Clock::time_point deadline = Clock::now() + budget;
  const std::string tag = k.kernel + " [" + k.shape + "]";
  progress << tag << ": built-in " << describe(k.default_params) << ": " << fmt_us(k.default_us) << ", floor "
           << fmt_us(k.floor_us) << "\n";
  GateContext ctx;
  ctx.key = {k.kernel, k.shape, dev.props.name, dev.cc(), dev.driver,
             k.source_hash.empty() ? kernels::rtc_sources_hash() : k.source_hash};
  ctx.default_us = k.default_us;
  ctx.floor_us = k.floor_us;
  ctx.workload = k.workload;
  Gate gate(log, store);
  const auto new_attempt = [&](const std::string& origin, const ParameterSet& p) {
    Attempt a;
    a.kernel = k.kernel;
    a.shape = k.shape;
    a.origin = origin;
    a.params = p;
    a.source_hash = ctx.key.source_hash;
    return a;
  };

  // Every variant, pruned by the static rules, ordered by the prediction; the built-in
  // parameters first, so the run-time compiled path is checked against the nvcc build.
  struct Ranked {
    double predicted_us, tie;
    ParameterSet params;
  };
  std::vector<Ranked> ordered;
  std::map<std::string, int> rejected;
  int pruned = 0;
  for (const ParameterSet& p : enumerate(k.space)) {
    const std::string problem = k.static_problem(p);
    if (!problem.empty()) {
      Attempt a = new_attempt("space", p);
      a.reason = problem;
      gate.record(a, ctx);
      ++pruned;
      ++rejected["pruned: " + problem.substr(0, problem.find(':'))];
      continue;
    }
    const auto [predicted, tie] = k.rank(p);
    ordered.push_back({p == k.default_params ? -1.0 : predicted, tie, p});
  }
  std::stable_sort(ordered.begin(), ordered.end(), [](const Ranked& a, const Ranked& b) {
    return a.predicted_us != b.predicted_us ? a.predicted_us < b.predicted_us : a.tie < b.tie;
  });

  int compiled = 0, tried = 0, passed = 0;
  double best_us = 0.0;
  ParameterSet best_params;
  gpu::KernelResources best_resources;
  std::string stop_reason = "every candidate tried";
  int model_sets_passed = 0, model_sets_required = 0;
  const auto compile = [&k, &dev](const ParameterSet& p, const std::string& header) {
    return gpu::rtc_compile(k.program(p, header), dev.props.compute_major, dev.props.compute_minor);
  };
  // Checks, verifies and times one compiled candidate.
  const auto run_candidate = [&](const ParameterSet& p, const std::string& origin, const gpu::RtcBinary& bin,
                                 double predicted) {
    Attempt a = new_attempt(origin, p);
    a.predicted_us = predicted;
    if (!bin.ok) {
      a.verdict = Verdict::compile_error;
      a.reason = "compile: " + bin.log.substr(0, 2000);
      return a;
    }
    a.compiled = true;
    ++compiled;
    try {
      const std::unique_ptr<LoadedCandidate> c = k.load(p, bin);
      const gpu::KernelResources r = c->resources();
      a.resources = {r.registers, r.static_shared_bytes, k.dynamic_shared_bytes(p), r.local_bytes,
                     r.max_threads_per_block};
      const Occupancy occ = occupancy(o.hw, a.resources, k.block_threads(p));
      a.occupancy = occ.fraction;
      if (r.local_bytes > 0) {
        a.verdict = Verdict::resources;
        a.reason = "resources: " + std::to_string(r.local_bytes) + " bytes of local memory per thread (spills)";
        return a;
      }
      if (occ.fraction < o.min_occupancy) {
        a.verdict = Verdict::resources;
        a.reason = "resources: occupancy " + std::to_string(occ.fraction) + " below " +
                   std::to_string(o.min_occupancy) + " (limited by " + occ.limiter + ")";
        return a;
      }
      const ForwardCheck check = c->verify();
      a.max_abs_error = check.max_abs_error;
      if (!check.ok) {
        a.verdict = Verdict::wrong;
        a.reason = "wrong: " + check.reason;
        return a;
      }
      if (origin == "model") {
        const SetsVerdict sets = verify_on_every_set(
            verification_sets(fresh_seed(), k.reads_bags),
            [&](const VerificationSet& s) {
              // A set whose bench cannot be built (memory, say) rejects the candidate; a
              // failed launch is the launch_error below.
              try {
                return set_check(k.verify_set(p, bin, s));
              } catch (const DeviceError&) {
                throw;
              } catch (const Error& e) {
                return SetCheck{false, std::string("the set could not be run: ") + e.what(), 0.0};
              }
            });
        model_sets_passed = sets.sets_passed;
        model_sets_required = sets.sets_required;
        a.max_abs_error = std::max(a.max_abs_error, sets.max_abs_error);
        if (!sets.ok) {
          a.verdict = Verdict::wrong;
          a.reason = "wrong: " + sets.reason;
          return a;
        }
      }
      a.time_us = c->median_us(o.reps);
      a.verdict = Verdict::passed;
      if (best_us == 0.0 || a.time_us < best_us) {
        best_us = a.time_us;
        best_params = p;
        best_resources = r;
      }
    } catch (const DeviceError& e) {
      a.verdict = Verdict::launch_error;
      a.reason = std::string("launch: ") + e.what();
    }
    return a;
  };

  // The next candidate compiles on another thread while this one is verified and timed.
  std::future<gpu::RtcBinary> next_binary;
  for (std::size_t i = 0; i < ordered.size(); ++i) {
    const Ranked& c = ordered[i];
    if (Clock::now() >= deadline) {
      stop_reason = "budget spent";
      break;
    }
    if (best_us > 0.0 && best_us <= k.floor_us * (1.0 + o.stop_fraction)) {
      stop_reason = "within " + std::to_string(static_cast<int>(o.stop_fraction * 100)) + "% of the floor";
      break;
    }
    ++tried;
    const gpu::RtcBinary bin = next_binary.valid() ? next_binary.get() : compile(c.params, "");
    if (i + 1 < ordered.size())
      next_binary = std::async(std::launch::async, compile, ordered[i + 1].params, std::string());
    const Attempt a = run_candidate(c.params, "space", bin, std::max(c.predicted_us, 0.0));
    if (a.verdict == Verdict::passed) ++passed;
    else ++rejected[a.reason.substr(0, a.reason.find(':'))];
    gate.record(a, ctx);
    progress << tag << ": " << tried << "/" << ordered.size() << " " << describe(c.params) << ": "
             << (a.verdict == Verdict::passed ? fmt_us(a.time_us) : a.reason.substr(0, 120)) << " | best "
             << fmt_us(best_us) << ", built-in " << fmt_us(k.default_us) << ", floor " << fmt_us(k.floor_us) << "\n";
  }

  nlohmann::json model_json = nullptr;
  if (const auto endpoint = llm_endpoint_from_env(); endpoint && best_us > 0.0 && Clock::now() < deadline) {
    KernelRewriteRequest req;
    req.kernel = k.kernel;
    req.header_name = k.header;
    req.header_text = embedded_text(k.header);
    req.signature = k.signature;
    req.resources = "registers " + std::to_string(best_resources.registers) + ", static shared " +
                    std::to_string(best_resources.static_shared_bytes) + " B, local " +
                    std::to_string(best_resources.local_bytes) + " B per thread";
    req.profile = "workload: " + k.workload + "; best " + describe(best_params) + " at " + fmt_us(best_us) +
                  "; built-in " + fmt_us(k.default_us) + "; floor " + fmt_us(k.floor_us);
    req.hardware = hardware_text(o.hw);
    Attempt a = new_attempt("model", best_params);
    std::string header;
    const LlmProposal proposal = propose_kernel_rewrite(*endpoint, req, proposer_limits());
    if (proposal.ok()) {
      header = proposal.header;
      a = run_candidate(best_params, "model", compile(best_params, header), 0.0);
    } else {
      a.verdict = Verdict::compile_error;
      a.reason = "no candidate: " + proposal.error;
    }
    if (a.verdict == Verdict::passed) ++passed;
    else ++rejected[a.reason.substr(0, a.reason.find(':'))];
    GateContext model_ctx = ctx;
    model_ctx.kernel_header = header;
    model_ctx.sets_passed = model_sets_passed;
    model_ctx.sets_required = model_sets_required;
    const bool kept = gate.record(a, model_ctx);
    progress << tag << ": model candidate: "
             << (a.verdict == Verdict::passed ? fmt_us(a.time_us) : a.reason.substr(0, 160))
             << (kept ? " (new winner)" : "") << "\n";
    model_json = {{"verdict", verdict_name(a.verdict)}, {"reason", a.reason},
                  {"time_us", a.time_us},                {"kept", kept},
                  {"sets_passed", model_sets_passed},    {"sets_required", model_sets_required}};
    ++tried;
  }

  const std::optional<Winner> winner = store.find(ctx.key);
  nlohmann::json r = {{"kernel", k.kernel},
                      {"shape", k.shape},
                      {"workload", k.workload},
                      {"floor_us", k.floor_us},
                      {"default_params", to_json(k.default_params)},
                      {"default_us", k.default_us},
                      {"variants_in_space", ordered.size() + pruned},
                      {"pruned_before_compile", pruned},
                      {"candidates_tried", tried},
                      {"candidates_compiled", compiled},
                      {"candidates_passed", passed},
                      {"rejected_by_reason", rejected},
                      {"stop_reason", stop_reason},
                      {"model_candidate", model_json}};
  r["built_in_kept"] = !winner.has_value();  // no variant beat the built-in kernel
  if (winner) {
    r["winner_params"] = to_json(winner->params);
    r["winner_us"] = winner->time_us;
    r["winner_from_model"] = !winner->kernel_header.empty();
    r["speedup_vs_default"] = k.default_us / winner->time_us;
    r["floor_over_winner"] = k.floor_us / winner->time_us;
  }
  progress << tag << ": "
           << (winner ? "winner " + describe(winner->params) + " " + fmt_us(winner->time_us)
                      : "built-in kept (no variant beat it)")
           << " vs built-in " << fmt_us(k.default_us) << ", floor " << fmt_us(k.floor_us) << " (" << stop_reason
           << ")\n";
  return r;
}

// Each tunable folder's adapters, defined in its <folder>_tuning.cpp.
#define HETREC_TUNABLE_FOLDER(folder) void add_##folder##_tuning(std::vector<TunableFamily>& out);
#include "tunable/tunable_folders.def"
#undef HETREC_TUNABLE_FOLDER

const std::vector<TunableFamily>& tunable_families() {
  static const std::vector<TunableFamily> families = [] {
    std::vector<TunableFamily> adapters;
#define HETREC_TUNABLE_FOLDER(folder) add_##folder##_tuning(adapters);
#include "tunable/tunable_folders.def"
#undef HETREC_TUNABLE_FOLDER
    return in_family_order(adapters, "tuning adapter");
  }();
  return families;
}

}  // namespace hetrec::tune
