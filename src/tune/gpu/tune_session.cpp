#include "tune/gpu/tune_session.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <random>
#include <sstream>

#include "core/error.h"
#include "gpu/device.h"
#include "gpu/rtc.h"
#include "kernels/embedding_bag_forward.h"
#include "kernels/embedding_forward_tuned.h"
#include "kernels/rtc_sources.h"
#include "tune/attempt.h"
#include "tune/gate.h"
#include "tune/gpu/embedding_forward_bench.h"
#include "tune/model_proposer.h"
#include "tune/winners.h"

namespace hetrec::tune {

namespace {

using Clock = std::chrono::steady_clock;

std::string utc_now(const char* format) {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char buf[64];
  std::strftime(buf, sizeof buf, format, std::gmtime(&now));
  return buf;
}

std::string fmt_us(double us) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(1) << us << " us";
  return s.str();
}

struct DeviceFacts {
  gpu::DeviceProperties props;
  int driver = 0;
  std::string cc() const { return std::to_string(props.compute_major) + "." + std::to_string(props.compute_minor); }
};

// The header a model candidate must keep the signature of.
const std::string kForwardHeader = "kernels/embedding_bag_forward_kernel.cuh";

std::string header_text(const std::string& name) {
  for (const gpu::RtcHeader& h : kernels::rtc_source_files())
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

// The search over one shape of the embedding forward.
nlohmann::json tune_forward_shape(const TuneOptions& o, const DeviceFacts& dev, DType row_dtype, WinnersStore& store,
                                  AttemptLog& log, Clock::time_point deadline, std::ostream& progress) {
  const uint64_t seed = std::random_device{}() ^ static_cast<uint64_t>(Clock::now().time_since_epoch().count());
  EmbeddingForwardBench bench(o.tables, o.dim, row_dtype, o.batch, seed, o.rotations);
  const EmbeddingForwardWorkload& w = bench.workload();
  const double floor = embedding_forward_floor_us(o.hw, w);
  const std::string tag = std::string(kEmbeddingForwardKernel) + " [" + w.shape.key() + "]";
  progress << tag << ": " << bench.describe() << "; floor " << fmt_us(floor) << "\n";

  // The built-in (nvcc) variant: the baseline, verified like any candidate.
  const ForwardLaunch builtin = [](const kernels::EmbeddingTables& t, const kernels::DeviceBags& b,
                                   const kernels::PooledView& p, int32_t* bad, gpu::stream_t s) {
    kernels::embedding_bag_forward(t, b, p, bad, s);
  };
  const ForwardCheck builtin_check = bench.verify(builtin);
  if (!builtin_check.ok) throw InternalError(tag + ": the built-in kernel fails its reference: " + builtin_check.reason);
  const double default_us = bench.median_us(builtin, o.reps);
  const ParameterSet default_params = forward_parameters(kernels::kDefaultForwardVariant, w.shape, o.hw.warp_size);
  progress << tag << ": built-in " << describe(default_params) << ": " << fmt_us(default_us) << "\n";

  GateContext ctx;
  ctx.key = {kEmbeddingForwardKernel, w.shape.key(), dev.props.name, dev.cc(), dev.driver, kernels::rtc_sources_hash()};
  ctx.default_us = default_us;
  ctx.floor_us = floor;
  ctx.workload = bench.describe();
  Gate gate(log, store);
  const auto new_attempt = [&](const std::string& origin, const ParameterSet& p) {
    Attempt a;
    a.kernel = kEmbeddingForwardKernel;
    a.shape = w.shape.key();
    a.origin = origin;
    a.params = p;
    a.source_hash = ctx.key.source_hash;
    return a;
  };

  // Proposal: every variant, pruned by the static rules, ordered by prediction; the
  // built-in parameters first, so the run-time compiled path is checked against it.
  struct Ranked {
    double predicted_us, issue_us;
    ParameterSet params;
  };
  std::vector<Ranked> ordered;
  std::map<std::string, int> rejected;
  int pruned = 0;
  for (const ParameterSet& p : enumerate(embedding_forward_space())) {
    Attempt a = new_attempt("space", p);
    const std::string problem = embedding_forward_static_problem(o.hw, w, p);
    if (!problem.empty()) {
      a.verdict = Verdict::pruned;
      a.reason = problem;
      gate.record(a, ctx);
      ++pruned;
      ++rejected[problem.substr(0, problem.find(':'))];
      continue;
    }
    // The built-in parameters sort first.
    const double predicted = p == default_params ? -1.0 : embedding_forward_predicted_us(o.hw, w, p, 1.0);
    ordered.push_back({predicted, embedding_forward_issue_us(o.hw, w, p), p});
  }
  std::stable_sort(ordered.begin(), ordered.end(), [](const Ranked& a, const Ranked& b) {
    return a.predicted_us != b.predicted_us ? a.predicted_us < b.predicted_us : a.issue_us < b.issue_us;
  });

  int compiled = 0, tried = 0, passed = 0;
  double best_us = 0.0;
  ParameterSet best_params;
  gpu::KernelResources best_resources;
  std::string stop_reason = "every candidate tried";
  // Compiles, checks, verifies and times one candidate; returns the attempt.
  const auto run_candidate = [&](const ParameterSet& p, const std::string& origin, const std::string& header,
                                 double predicted) {
    Attempt a = new_attempt(origin, p);
    a.predicted_us = predicted;
    const kernels::EmbeddingForwardVariant v = to_forward_variant(p);
    const gpu::RtcBinary bin = gpu::rtc_compile(kernels::embedding_forward_program(w.shape, v, header),
                                                dev.props.compute_major, dev.props.compute_minor);
    if (!bin.ok) {
      a.verdict = Verdict::compile_error;
      a.reason = "compile: " + bin.log.substr(0, 2000);
      return a;
    }
    a.compiled = true;
    ++compiled;
    try {
      const kernels::TunedEmbeddingForward tuned(w.shape, v, bin);
      const gpu::KernelResources r = tuned.resources();
      a.resources = {r.registers, r.static_shared_bytes, r.local_bytes, r.max_threads_per_block};
      const Occupancy occ = occupancy(o.hw, a.resources, v.block_threads);
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
      const ForwardLaunch launch = [&tuned](const kernels::EmbeddingTables& t, const kernels::DeviceBags& b,
                                            const kernels::PooledView& pv, int32_t* bad, gpu::stream_t s) {
        tuned.launch(t, b, pv, bad, s);
      };
      const ForwardCheck check = bench.verify(launch);
      a.max_abs_error = check.max_abs_error;
      if (!check.ok) {
        a.verdict = Verdict::wrong;
        a.reason = "wrong: " + check.reason;
        return a;
      }
      a.time_us = bench.median_us(launch, o.reps);
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

  for (const Ranked& c : ordered) {
    const ParameterSet& p = c.params;
    if (Clock::now() >= deadline) {
      stop_reason = "budget spent";
      break;
    }
    if (best_us > 0.0 && best_us <= floor * (1.0 + o.stop_fraction)) {
      stop_reason = "within " + std::to_string(static_cast<int>(o.stop_fraction * 100)) + "% of the floor";
      break;
    }
    ++tried;
    Attempt a = run_candidate(p, "space", "", std::max(c.predicted_us, 0.0));
    if (a.verdict == Verdict::passed) ++passed;
    else ++rejected[verdict_name(a.verdict)];
    gate.record(a, ctx);
    progress << tag << ": " << tried << "/" << ordered.size() << " " << describe(p) << ": "
             << (a.verdict == Verdict::passed ? fmt_us(a.time_us) : a.reason.substr(0, 120))
             << " | best " << fmt_us(best_us) << ", built-in " << fmt_us(default_us) << ", floor " << fmt_us(floor)
             << "\n";
  }

  nlohmann::json model_json = nullptr;
  if (const auto endpoint = model_endpoint_from_env(); endpoint && best_us > 0.0 && Clock::now() < deadline) {
    KernelRewriteRequest req;
    req.kernel = kEmbeddingForwardKernel;
    req.header_name = kForwardHeader;
    req.header_text = header_text(kForwardHeader);
    req.signature = "template <class Row, class Out, int VEC, int UNITS, int IDS_IN_FLIGHT, int BLOCK_THREADS> "
                    "__global__ void embedding_bag_forward_kernel(const Row* weights, const int64_t* row_offsets, "
                    "const uint8_t* mean_pooling, const int32_t* offsets, const int32_t* ids, int64_t batch, "
                    "int num_tables, int dim, int lanes, Out* out, int64_t out_stride, int32_t* bad_ids) in namespace "
                    "hetrec::kernels, including kernels/row_vector.cuh";
    req.resources = "registers " + std::to_string(best_resources.registers) + ", static shared " +
                    std::to_string(best_resources.static_shared_bytes) + " B, local " +
                    std::to_string(best_resources.local_bytes) + " B per thread";
    req.profile = "workload: " + bench.describe() + "; best " + describe(best_params) + " at " + fmt_us(best_us) +
                  "; built-in " + fmt_us(default_us) + "; floor " + fmt_us(floor);
    req.hardware = hardware_text(o.hw);
    Attempt a = new_attempt("model", best_params);
    std::string header;
    try {
      header = request_kernel_rewrite(*endpoint, req, 300);
      a = run_candidate(best_params, "model", header, 0.0);
    } catch (const IoError& e) {
      a.verdict = Verdict::compile_error;
      a.reason = std::string("no candidate: ") + e.what();
    }
    if (a.verdict == Verdict::passed) ++passed;
    else ++rejected[verdict_name(a.verdict)];
    GateContext model_ctx = ctx;
    model_ctx.kernel_header = header;
    const bool kept = gate.record(a, model_ctx);
    progress << tag << ": model candidate: "
             << (a.verdict == Verdict::passed ? fmt_us(a.time_us) : a.reason.substr(0, 160))
             << (kept ? " (new winner)" : "") << "\n";
    model_json = {{"verdict", verdict_name(a.verdict)}, {"reason", a.reason}, {"time_us", a.time_us}, {"kept", kept}};
    ++tried;
  }

  const std::optional<Winner> winner = store.find(ctx.key);
  nlohmann::json r = {{"kernel", kEmbeddingForwardKernel},
                      {"shape", w.shape.key()},
                      {"workload", bench.describe()},
                      {"floor_us", floor},
                      {"default_params", to_json(default_params)},
                      {"default_us", default_us},
                      {"variants_in_space", ordered.size() + pruned},
                      {"pruned_before_compile", pruned},
                      {"candidates_tried", tried},
                      {"candidates_compiled", compiled},
                      {"candidates_passed", passed},
                      {"rejected_by_reason", rejected},
                      {"stop_reason", stop_reason},
                      {"model_candidate", model_json}};
  if (winner) {
    r["winner_params"] = to_json(winner->params);
    r["winner_us"] = winner->time_us;
    r["winner_from_model"] = !winner->kernel_header.empty();
    r["speedup_vs_default"] = default_us / winner->time_us;
    r["winner_fraction_of_floor"] = floor / winner->time_us;
  }
  progress << tag << ": " << (winner ? "winner " + describe(winner->params) + " " + fmt_us(winner->time_us) : "no winner")
           << " vs built-in " << fmt_us(default_us) << ", floor " << fmt_us(floor) << " (" << stop_reason << ")\n";
  return r;
}

}  // namespace

std::vector<std::string> tunable_kernels() { return {kEmbeddingForwardKernel}; }

nlohmann::json run_tuning(const TuneOptions& o, std::ostream& progress) {
  std::vector<std::string> kernels = o.kernels;
  if (std::find(kernels.begin(), kernels.end(), "all") != kernels.end()) kernels = tunable_kernels();
  const std::vector<std::string> known = tunable_kernels();
  for (const std::string& k : kernels)
    if (std::find(known.begin(), known.end(), k) == known.end())
      throw ConfigError("--kernel " + k + ": no variant space for this kernel; tunable: embedding_bag_forward, all");
  if (gpu::device_count() == 0) throw DeviceError("hetrec tune: no GPU is visible; tuning measures on the device");
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(o.budget_minutes * 60.0));
  DeviceFacts dev{gpu::device_properties(gpu::current_device()), gpu::driver_version()};
  if (dev.props.warp_size != o.hw.warp_size)
    throw ConfigError("hardware description '" + o.hw.name + "' has warp size " + std::to_string(o.hw.warp_size) +
                      ", the device " + std::to_string(dev.props.warp_size));

  std::filesystem::create_directories(o.out_dir);
  const std::string stamp = utc_now("%Y%m%d-%H%M%S");
  AttemptLog log(o.out_dir + "/tune-attempts-" + stamp + ".jsonl");
  WinnersStore store = WinnersStore::load(o.winners_path);
  nlohmann::json shapes = nlohmann::json::array();
  for (const std::string& k : kernels) {
    if (k != kEmbeddingForwardKernel) continue;
    for (size_t i = 0; i < o.row_dtypes.size(); ++i) {
      // Share what is left of the budget among the remaining shapes.
      const auto left = deadline - Clock::now();
      const auto shape_deadline = Clock::now() + left / static_cast<long>(o.row_dtypes.size() - i);
      shapes.push_back(tune_forward_shape(o, dev, o.row_dtypes[i], store, log, shape_deadline, progress));
      if (!o.winners_path.empty()) {
        const auto parent = std::filesystem::path(o.winners_path).parent_path();
        if (!parent.empty()) std::filesystem::create_directories(parent);
        store.save(o.winners_path);
      }
    }
  }
  const char* commit = std::getenv("HETREC_COMMIT");
  nlohmann::json results = {
      {"date", utc_now("%Y-%m-%dT%H:%M:%SZ")},
      {"gpu", dev.props.name},
      {"compute_capability", dev.cc()},
      {"driver_version", dev.driver},
      {"hardware", o.hw.name},
      {"commit", commit ? commit : "unknown"},
      {"command", o.command_line},
      {"budget_minutes", o.budget_minutes},
      {"elapsed_s", std::chrono::duration<double>(Clock::now() - start).count()},
      {"stop_fraction", o.stop_fraction},
      {"min_occupancy", o.min_occupancy},
      {"source_hash", kernels::rtc_sources_hash()},
      {"attempt_log", log.path()},
      {"winners_file", o.winners_path},
      {"kernels_without_space",
       "embedding backward (fused optimizer), dot interaction, cross net, element-wise kernels: not declared yet"},
      {"shapes", shapes}};
  const std::string results_path = o.out_dir + "/tune-" + stamp + ".json";
  results["results_file"] = results_path;
  std::ofstream f(results_path);
  f << results.dump(2) << '\n';
  if (!f) throw IoError("hetrec tune: cannot write " + results_path);
  return results;
}

}  // namespace hetrec::tune
