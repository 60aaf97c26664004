#include "tune/gpu/tune_session.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <iomanip>
#include <memory>
#include <random>
#include <sstream>

#include "core/error.h"
#include "core/utc_time.h"
#include "gemm/cublaslt_gemm.h"
#include "gpu/caching_allocator.h"
#include "gpu/device.h"
#include "gpu/rtc.h"
#include "kernels/cross_net_tuned.h"
#include "kernels/dot_interaction_backward_tuned.h"
#include "kernels/dot_interaction_tuned.h"
#include "kernels/embedding_bag_backward.h"
#include "kernels/embedding_bag_forward.h"
#include "kernels/embedding_forward_tuned.h"
#include "kernels/rtc_sources.h"
#include "kernels/small_gemm_sources.h"
#include "kernels/small_gemm_tuned.h"
#include "kernels/sparse_update_tuned.h"
#include "tune/attempt.h"
#include "tune/cross_net_model.h"
#include "tune/dot_backward_model.h"
#include "tune/dot_interaction_model.h"
#include "tune/embedding_forward_model.h"
#include "tune/gate.h"
#include "tune/gpu/cross_net_bench.h"
#include "tune/gpu/dot_backward_bench.h"
#include "tune/gpu/dot_interaction_bench.h"
#include "tune/gpu/embedding_forward_bench.h"
#include "tune/gpu/small_gemm_bench.h"
#include "tune/gpu/sparse_update_bench.h"
#include "tune/model_proposer.h"
#include "tune/small_gemm_model.h"
#include "tune/sparse_update_model.h"
#include "tune/winners.h"

namespace hetrec::tune {

namespace {

using Clock = std::chrono::steady_clock;

std::string fmt_us(double us) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(1) << us << " us";
  return s.str();
}

uint64_t fresh_seed() {
  return std::random_device{}() ^ static_cast<uint64_t>(Clock::now().time_since_epoch().count());
}

struct DeviceFacts {
  gpu::DeviceProperties props;
  int driver = 0;
  std::string cc() const { return std::to_string(props.compute_major) + "." + std::to_string(props.compute_minor); }
};

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

// A compiled candidate loaded on the device, bound to its workload.
class LoadedCandidate {
 public:
  virtual ~LoadedCandidate() = default;
  virtual gpu::KernelResources resources() const = 0;
  virtual ForwardCheck verify() = 0;
  virtual double median_us(int reps) = 0;
};

// What the search needs of one kernel and shape.
struct KernelProblem {
  std::string kernel;
  std::string shape;
  std::string workload;
  std::string header;     // the kernel header a model candidate rewrites
  std::string signature;  // what a rewrite must keep
  std::string source_hash;  // the winners' validator: empty for kernels::rtc_sources_hash()
  double floor_us = 0.0;
  double default_us = 0.0;
  ParameterSet default_params;
  VariantSpace space;
  std::function<std::string(const ParameterSet&)> static_problem;
  std::function<std::pair<double, double>(const ParameterSet&)> rank;  // (prediction, tie-break), lower first
  std::function<int(const ParameterSet&)> block_threads;
  std::function<std::size_t(const ParameterSet&)> dynamic_shared_bytes;
  std::function<gpu::RtcProgram(const ParameterSet&, const std::string& header)> program;
  std::function<std::unique_ptr<LoadedCandidate>(const ParameterSet&, const gpu::RtcBinary&)> load;
  // A model candidate's extra verification (tune/gate.h verification_sets): the compiled
  // candidate on a fresh bench of one input set; reads_bags adds the edge shapes.
  bool reads_bags = false;
  std::function<ForwardCheck(const ParameterSet&, const gpu::RtcBinary&, const VerificationSet&)> verify_set;
};

SetCheck set_check(const ForwardCheck& c) { return {c.ok, c.reason, c.max_abs_error}; }

// Proposes, compiles, checks, verifies, times and keeps, for one kernel and shape.
nlohmann::json search(const TuneOptions& o, const DeviceFacts& dev, const KernelProblem& k, WinnersStore& store,
                      AttemptLog& log, Clock::time_point deadline, std::ostream& progress) {
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
  if (const auto endpoint = model_endpoint_from_env(); endpoint && best_us > 0.0 && Clock::now() < deadline) {
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
    const ModelProposal proposal = propose_kernel_rewrite(*endpoint, req, proposer_limits());
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

// ---- the embedding forward ----

class LoadedForward final : public LoadedCandidate {
 public:
  LoadedForward(EmbeddingForwardBench& bench, const kernels::EmbeddingForwardVariant& v, const gpu::RtcBinary& bin)
      : bench_(bench), kernel_(bench.workload().shape, v, bin) {}
  gpu::KernelResources resources() const override { return kernel_.resources(); }
  ForwardCheck verify() override { return bench_.verify(launch()); }
  double median_us(int reps) override { return bench_.median_us(launch(), reps); }

 private:
  ForwardLaunch launch() const {
    return [this](const kernels::EmbeddingTables& t, const kernels::DeviceBags& b, const kernels::PooledView& p,
                  int32_t* bad, gpu::stream_t s) { kernel_.launch(t, b, p, bad, s); };
  }
  EmbeddingForwardBench& bench_;
  kernels::TunedEmbeddingForward kernel_;
};

nlohmann::json tune_embedding_forward(const TuneOptions& o, const DeviceFacts& dev, DType row_dtype,
                                      WinnersStore& store, AttemptLog& log, Clock::time_point deadline,
                                      std::ostream& progress) {
  EmbeddingForwardBench bench(o.tables, o.dim, row_dtype, o.batch, fresh_seed(), o.rotations);
  const EmbeddingForwardWorkload w = bench.workload();
  progress << kEmbeddingForwardKernel << " [" << w.shape.key() << "]: " << bench.describe() << "\n";
  // The built-in (nvcc) variant: the baseline, verified like any candidate.
  const ForwardLaunch builtin = [](const kernels::EmbeddingTables& t, const kernels::DeviceBags& b,
                                   const kernels::PooledView& p, int32_t* bad, gpu::stream_t s) {
    kernels::embedding_bag_forward(t, b, p, bad, s);
  };
  const ForwardCheck check = bench.verify(builtin);
  if (!check.ok) throw InternalError("embedding forward: the built-in kernel fails its reference: " + check.reason);

  KernelProblem k;
  k.kernel = kEmbeddingForwardKernel;
  k.shape = w.shape.key();
  k.workload = bench.describe();
  k.header = "kernels/embedding_bag_forward_kernel.cuh";
  k.signature = "template <class Row, class Out, int VEC, int UNITS, int IDS_IN_FLIGHT, int BLOCK_THREADS> __global__ "
                "void embedding_bag_forward_kernel(const Row* weights, void* const* table_weights, const int64_t* row_offsets, "
                "const uint8_t* "
                "mean_pooling, const int32_t* offsets, const int32_t* ids, int64_t batch, int num_tables, int dim, "
                "int lanes, Out* out, int64_t out_stride, int32_t* bad_ids) in namespace hetrec::kernels";
  k.floor_us = embedding_forward_floor_us(o.hw, w);
  k.default_us = bench.median_us(builtin, o.reps);
  k.default_params = forward_parameters(kernels::kDefaultForwardVariant, w.shape, o.hw.warp_size);
  k.space = embedding_forward_space();
  k.static_problem = [&](const ParameterSet& p) { return embedding_forward_static_problem(o.hw, w, p); };
  k.rank = [&](const ParameterSet& p) {
    return std::make_pair(embedding_forward_predicted_us(o.hw, w, p, 1.0), embedding_forward_issue_us(o.hw, w, p));
  };
  k.block_threads = [](const ParameterSet& p) { return to_forward_variant(p).block_threads; };
  k.dynamic_shared_bytes = [](const ParameterSet&) { return std::size_t{0}; };
  k.program = [&](const ParameterSet& p, const std::string& header) {
    return kernels::embedding_forward_program(w.shape, to_forward_variant(p), header);
  };
  k.load = [&](const ParameterSet& p, const gpu::RtcBinary& bin) -> std::unique_ptr<LoadedCandidate> {
    return std::make_unique<LoadedForward>(bench, to_forward_variant(p), bin);
  };
  k.reads_bags = true;
  k.verify_set = [&](const ParameterSet& p, const gpu::RtcBinary& bin, const VerificationSet& s) {
    EmbeddingForwardBench b(verification_tables(o.tables, s.shape), o.dim, row_dtype, kVerificationBatch, s.seed, 1);
    return LoadedForward(b, to_forward_variant(p), bin).verify();
  };
  return search(o, dev, k, store, log, deadline, progress);
}

// ---- the dot interaction forward ----

class LoadedDot final : public LoadedCandidate {
 public:
  LoadedDot(DotForwardBench& bench, const kernels::DotForwardVariant& v, const gpu::RtcBinary& bin)
      : bench_(bench), kernel_(bench.workload().shape, v, bin) {}
  gpu::KernelResources resources() const override { return kernel_.resources(); }
  ForwardCheck verify() override { return bench_.verify(launch()); }
  double median_us(int reps) override { return bench_.median_us(launch(), reps); }

 private:
  DotLaunch launch() const {
    return [this](const kernels::DotInteractionShape& s, const float* f, int64_t fs, float* out, int64_t os,
                  gpu::stream_t st) { kernel_.launch(s, f, fs, out, os, st); };
  }
  DotForwardBench& bench_;
  kernels::TunedDotForward kernel_;
};

nlohmann::json tune_dot_forward(const TuneOptions& o, const DeviceFacts& dev, WinnersStore& store, AttemptLog& log,
                                Clock::time_point deadline, std::ostream& progress) {
  const kernels::DotForwardShape shape{static_cast<int>(o.tables.size()) + 1, o.dim, o.interaction_self};
  DotForwardBench bench(shape, o.batch, fresh_seed(), 2);
  const DotForwardWorkload w = bench.workload();
  progress << kDotForwardKernel << " [" << shape.key() << "]: " << bench.describe() << "\n";
  const DotLaunch builtin = [](const kernels::DotInteractionShape& s, const float* f, int64_t fs, float* out,
                               int64_t os, gpu::stream_t st) { kernels::dot_interaction_forward(s, f, fs, out, os, st); };
  const ForwardCheck check = bench.verify(builtin);
  if (!check.ok) throw InternalError("dot interaction: the built-in kernel fails its reference: " + check.reason);

  KernelProblem k;
  k.kernel = kDotForwardKernel;
  k.shape = shape.key();
  k.workload = bench.describe();
  k.header = "kernels/dot_interaction_kernel.cuh";
  k.signature = "template <int BLOCK_THREADS, int SAMPLES_PER_BLOCK, int ROW_PAD> __global__ void "
                "dot_forward_kernel(const float* features, int64_t feature_stride, float* out, int64_t out_stride, "
                "int64_t batch, int num_features, int dim, bool self) in namespace hetrec::kernels, dynamic shared "
                "memory SAMPLES_PER_BLOCK x num_features x (dim + ROW_PAD) floats; keep dot_pair_of and "
                "dot_load_features (the backward uses them)";
  k.floor_us = dot_forward_floor_us(o.hw, w);
  k.default_us = bench.median_us(builtin, o.reps);
  k.default_params = dot_parameters(kernels::kDefaultDotForwardVariant);
  k.space = dot_forward_space();
  k.static_problem = [&](const ParameterSet& p) { return dot_forward_static_problem(o.hw, w, p); };
  k.rank = [&](const ParameterSet& p) {
    return std::make_pair(dot_forward_predicted_us(o.hw, w, p), -dot_forward_shared_occupancy(o.hw, w, p));
  };
  k.block_threads = [](const ParameterSet& p) { return to_dot_variant(p).block_threads; };
  k.dynamic_shared_bytes = [&](const ParameterSet& p) {
    return kernels::dot_forward_shared_bytes(shape.num_features, shape.dim, to_dot_variant(p));
  };
  k.program = [](const ParameterSet& p, const std::string& header) {
    return kernels::dot_forward_program(to_dot_variant(p), header);
  };
  k.load = [&](const ParameterSet& p, const gpu::RtcBinary& bin) -> std::unique_ptr<LoadedCandidate> {
    return std::make_unique<LoadedDot>(bench, to_dot_variant(p), bin);
  };
  k.verify_set = [&](const ParameterSet& p, const gpu::RtcBinary& bin, const VerificationSet& s) {
    DotForwardBench b(shape, kVerificationBatch, s.seed, 1);
    return LoadedDot(b, to_dot_variant(p), bin).verify();
  };
  return search(o, dev, k, store, log, deadline, progress);
}

// ---- the embedding backward's fused sparse update ----

class LoadedUpdate final : public LoadedCandidate {
 public:
  LoadedUpdate(SparseUpdateBench& bench, const kernels::SparseUpdateVariant& v, const gpu::RtcBinary& bin)
      : bench_(bench), kernel_(bench.workload().shape, v, bin) {}
  gpu::KernelResources resources() const override { return kernel_.resources(); }
  ForwardCheck verify() override { return bench_.verify(launch()); }
  double median_us(int reps) override { return bench_.median_us(launch(), reps); }

 private:
  UpdateLaunch launch() const {
    return [this](const kernels::EmbeddingTables& t, const kernels::DeviceBags& b, const float* g, int64_t gs,
                  const kernels::SparseOptimizerParams& o, const kernels::SparseUpdatePlan& p,
                  gpu::stream_t s) { kernel_.launch(t, b, g, gs, o, p, s); };
  }
  SparseUpdateBench& bench_;
  kernels::TunedSparseUpdate kernel_;
};

nlohmann::json tune_sparse_update(const TuneOptions& o, const DeviceFacts& dev, DType row_dtype, WinnersStore& store,
                                  AttemptLog& log, Clock::time_point deadline, std::ostream& progress) {
  const SparseUpdateRule rule{o.sparse_optimizer, static_cast<float>(o.sparse_lr), static_cast<float>(o.sparse_eps)};
  SparseUpdateBench bench(o.tables, o.dim, row_dtype, rule, o.batch, fresh_seed(), o.rotations);
  const SparseUpdateWorkload w = bench.workload();
  progress << kSparseUpdateKernel << " [" << w.shape.key() << "]: " << bench.describe() << "\n";
  // The built-in (nvcc) update: the baseline, verified like any candidate.
  const UpdateLaunch builtin = [](const kernels::EmbeddingTables& t, const kernels::DeviceBags& b, const float* g,
                                  int64_t gs, const kernels::SparseOptimizerParams& opt,
                                  const kernels::SparseUpdatePlan& p, gpu::stream_t s) {
    kernels::embedding_backward_apply(t, b, g, gs, opt, p, s);
  };
  const ForwardCheck check = bench.verify(builtin);
  if (!check.ok) throw InternalError("sparse update: the built-in kernel fails its reference: " + check.reason);

  KernelProblem k;
  k.kernel = kSparseUpdateKernel;
  k.shape = w.shape.key();
  k.workload = bench.describe();
  k.header = "kernels/sparse_update_kernel.cuh";
  k.signature = "template <class Row, int VEC, int UNITS, SparseOptimizerKind OPT, int GRADS_IN_FLIGHT, int "
                "BLOCK_THREADS, int MIN_BLOCKS_PER_SM> __global__ void sparse_update_kernel(Row* weights, float* "
                "accumulators, void* const* table_weights, float* const* table_accumulators, const uint32_t* "
                "sorted_keys, const uint32_t* sorted_bags, const uint32_t* segment_start, const uint32_t* num_unique, "
                "const uint32_t* chunks, const uint32_t* chunk_start, const float* partial, const int32_t* offsets, "
                "const int64_t* row_offsets, const uint8_t* mean_pooling, const float* grad, int64_t grad_stride, "
                "int64_t batch, int dim, int lanes, int64_t total_rows, const StepScalars* scalars, float eps, "
                "uint64_t seed, const ShardOrigin* shard_origins, int cached_table_keys) in namespace "
                "hetrec::kernels, dynamic shared memory cached_table_keys x 8 bytes; keep sparse_add_occurrences, "
                "sparse_zero and sparse_table_of_bag (the chunk sums use them)";
  k.floor_us = sparse_update_floor_us(o.hw, w);
  k.default_us = bench.median_us(builtin, o.reps);
  k.default_params = sparse_update_parameters(kernels::kDefaultSparseUpdateVariant, w.shape, o.hw.warp_size);
  k.space = sparse_update_space();
  k.static_problem = [&](const ParameterSet& p) { return sparse_update_static_problem(o.hw, w, p); };
  k.rank = [&](const ParameterSet& p) {
    return std::make_pair(sparse_update_predicted_us(o.hw, w, p), sparse_update_issue_us(o.hw, w, p));
  };
  k.block_threads = [](const ParameterSet& p) { return to_sparse_update_variant(p).block_threads; };
  k.dynamic_shared_bytes = [&](const ParameterSet&) {
    return static_cast<std::size_t>(kernels::sparse_update_cached_table_keys(row_dtype, w.num_tables)) *
           sizeof(uint64_t);
  };
  k.program = [&](const ParameterSet& p, const std::string& header) {
    return kernels::sparse_update_program(w.shape, to_sparse_update_variant(p), header);
  };
  k.load = [&](const ParameterSet& p, const gpu::RtcBinary& bin) -> std::unique_ptr<LoadedCandidate> {
    return std::make_unique<LoadedUpdate>(bench, to_sparse_update_variant(p), bin);
  };
  k.reads_bags = true;
  k.verify_set = [&](const ParameterSet& p, const gpu::RtcBinary& bin, const VerificationSet& s) {
    SparseUpdateBench b(verification_tables(o.tables, s.shape), o.dim, row_dtype, rule, kVerificationBatch, s.seed, 1);
    return LoadedUpdate(b, to_sparse_update_variant(p), bin).verify();
  };
  return search(o, dev, k, store, log, deadline, progress);
}

// ---- the dot interaction backward ----

class LoadedDotBackward final : public LoadedCandidate {
 public:
  LoadedDotBackward(DotBackwardBench& bench, const kernels::DotBackwardVariant& v, const gpu::RtcBinary& bin)
      : bench_(bench), kernel_(bench.workload().shape, v, bin) {}
  gpu::KernelResources resources() const override { return kernel_.resources(); }
  ForwardCheck verify() override { return bench_.verify(launch()); }
  double median_us(int reps) override { return bench_.median_us(launch(), reps); }

 private:
  DotBackwardLaunch launch() const {
    return [this](const kernels::DotInteractionShape& s, const float* f, int64_t fs, const float* g, int64_t gs,
                  float* df, int64_t dfs, gpu::stream_t st) { kernel_.launch(s, f, fs, g, gs, df, dfs, st); };
  }
  DotBackwardBench& bench_;
  kernels::TunedDotBackward kernel_;
};

nlohmann::json tune_dot_backward(const TuneOptions& o, const DeviceFacts& dev, WinnersStore& store, AttemptLog& log,
                                 Clock::time_point deadline, std::ostream& progress) {
  const kernels::DotForwardShape shape{static_cast<int>(o.tables.size()) + 1, o.dim, o.interaction_self};
  DotBackwardBench bench(shape, o.batch, fresh_seed(), 2);
  const DotBackwardWorkload w = bench.workload();
  progress << kDotBackwardKernel << " [" << shape.key() << "]: " << bench.describe() << "\n";
  const DotBackwardLaunch builtin = [](const kernels::DotInteractionShape& s, const float* f, int64_t fs,
                                       const float* g, int64_t gs, float* df, int64_t dfs, gpu::stream_t st) {
    kernels::dot_interaction_backward(s, f, fs, g, gs, df, dfs, st);
  };
  const ForwardCheck check = bench.verify(builtin);
  if (!check.ok)
    throw InternalError("dot interaction backward: the built-in kernel fails its reference: " + check.reason);

  KernelProblem k;
  k.kernel = kDotBackwardKernel;
  k.shape = shape.key();
  k.workload = bench.describe();
  k.header = "kernels/dot_interaction_backward_kernel.cuh";
  k.signature = "template <int BLOCK_THREADS, int SAMPLES_PER_BLOCK, int ROW_PAD, int ROWS_PER_THREAD> __global__ "
                "void dot_backward_kernel(const float* features, int64_t feature_stride, const float* dout, int64_t "
                "dout_stride, float* dfeatures, int64_t dfeature_stride, int64_t batch, int num_features, int dim, "
                "bool self) in namespace hetrec::kernels, dynamic shared memory SAMPLES_PER_BLOCK x (num_features x "
                "(dim + ROW_PAD) + num_features x (num_features + ROW_PAD)) floats; it may use dot_pair_of and "
                "dot_load_features of kernels/dot_interaction_kernel.cuh";
  k.floor_us = dot_backward_floor_us(o.hw, w);
  k.default_us = bench.median_us(builtin, o.reps);
  k.default_params = dot_backward_parameters(kernels::kDefaultDotBackwardVariant);
  k.space = dot_backward_space();
  k.static_problem = [&](const ParameterSet& p) { return dot_backward_static_problem(o.hw, w, p); };
  k.rank = [&](const ParameterSet& p) {
    return std::make_pair(dot_backward_predicted_us(o.hw, w, p), -dot_backward_shared_occupancy(o.hw, w, p));
  };
  k.block_threads = [](const ParameterSet& p) { return to_dot_backward_variant(p).block_threads; };
  k.dynamic_shared_bytes = [&](const ParameterSet& p) {
    return kernels::dot_backward_shared_bytes(shape.num_features, shape.dim, to_dot_backward_variant(p));
  };
  k.program = [](const ParameterSet& p, const std::string& header) {
    return kernels::dot_backward_program(to_dot_backward_variant(p), header);
  };
  k.load = [&](const ParameterSet& p, const gpu::RtcBinary& bin) -> std::unique_ptr<LoadedCandidate> {
    return std::make_unique<LoadedDotBackward>(bench, to_dot_backward_variant(p), bin);
  };
  k.verify_set = [&](const ParameterSet& p, const gpu::RtcBinary& bin, const VerificationSet& s) {
    DotBackwardBench b(shape, kVerificationBatch, s.seed, 1);
    return LoadedDotBackward(b, to_dot_backward_variant(p), bin).verify();
  };
  return search(o, dev, k, store, log, deadline, progress);
}

// ---- the cross net's element-wise passes ----

class LoadedCrossForward final : public LoadedCandidate {
 public:
  LoadedCrossForward(CrossForwardBench& bench, const kernels::CrossForwardVariant& v, const gpu::RtcBinary& bin)
      : bench_(bench), kernel_(bench.workload().shape, v, bin) {}
  gpu::KernelResources resources() const override { return kernel_.resources(); }
  ForwardCheck verify() override { return bench_.verify(launch()); }
  double median_us(int reps) override { return bench_.median_us(launch(), reps); }

 private:
  CrossForwardLaunch launch() const {
    return [this](const kernels::CrossShape& s, const float* x0, const float* x, const void* z, float* out,
                  void* out_op, DType op, gpu::stream_t st) { kernel_.launch(s, x0, x, z, out, out_op, op, st); };
  }
  CrossForwardBench& bench_;
  kernels::TunedCrossForward kernel_;
};

class LoadedCrossBackward final : public LoadedCandidate {
 public:
  LoadedCrossBackward(CrossBackwardBench& bench, const kernels::CrossBackwardVariant& v, const gpu::RtcBinary& bin)
      : bench_(bench), kernel_(bench.workload().shape, v, bin) {}
  gpu::KernelResources resources() const override { return kernel_.resources(); }
  ForwardCheck verify() override { return bench_.verify(launch()); }
  double median_us(int reps) override { return bench_.median_us(launch(), reps); }

 private:
  CrossBackwardLaunch launch() const {
    return [this](const kernels::CrossShape& s, const kernels::CrossBackward& a, void* ws, std::size_t bytes,
                  gpu::stream_t st) { kernel_.launch(s, a, ws, bytes, st); };
  }
  CrossBackwardBench& bench_;
  kernels::TunedCrossBackward kernel_;
};

kernels::CrossNetShape cross_shape(const TuneOptions& o, DType op) {
  return {op, static_cast<int>(o.tables.size() + 1) * o.dim};
}

nlohmann::json tune_cross_forward(const TuneOptions& o, const DeviceFacts& dev, DType op, WinnersStore& store,
                                  AttemptLog& log, Clock::time_point deadline, std::ostream& progress) {
  CrossForwardBench bench(cross_shape(o, op), o.batch, fresh_seed());
  const CrossWorkload w = bench.workload();
  progress << kCrossForwardKernel << " [" << w.shape.key() << "]: " << bench.describe() << "\n";
  const CrossForwardLaunch builtin = [](const kernels::CrossShape& s, const float* x0, const float* x, const void* z,
                                        float* out, void* out_op, DType t, gpu::stream_t st) {
    kernels::cross_forward(s, x0, x, z, out, out_op, t, st);
  };
  const ForwardCheck check = bench.verify(builtin);
  if (!check.ok) throw InternalError("cross forward: the built-in kernel fails its reference: " + check.reason);

  KernelProblem k;
  k.kernel = kCrossForwardKernel;
  k.shape = w.shape.key();
  k.workload = bench.describe();
  k.header = kernels::kCrossNetKernelHeader;
  k.signature = "template <class Op, int VEC, int ITEMS, int BLOCK_THREADS> __global__ void cross_forward_kernel(const "
                "float* x0, const float* x, const Op* z, float* out, Op* out_op, int64_t elements, bool vector_ok) "
                "in namespace hetrec::kernels, grid ceil(elements / (BLOCK_THREADS x ITEMS x VEC)) blocks; keep "
                "cross_backward_chunk_kernel and its helpers unchanged";
  k.floor_us = cross_forward_floor_us(o.hw, w);
  k.default_us = bench.median_us(builtin, o.reps);
  k.default_params = cross_forward_parameters(kernels::kDefaultCrossForwardVariant);
  k.space = cross_forward_space();
  k.static_problem = [&](const ParameterSet& p) { return cross_forward_static_problem(o.hw, w, p); };
  k.rank = [&](const ParameterSet& p) { return cross_forward_rank(o.hw, w, p); };
  k.block_threads = [](const ParameterSet& p) { return to_cross_forward_variant(p).block_threads; };
  k.dynamic_shared_bytes = [](const ParameterSet&) { return std::size_t{0}; };
  k.program = [&](const ParameterSet& p, const std::string& header) {
    return kernels::cross_forward_program(w.shape, to_cross_forward_variant(p), header);
  };
  k.load = [&](const ParameterSet& p, const gpu::RtcBinary& bin) -> std::unique_ptr<LoadedCandidate> {
    return std::make_unique<LoadedCrossForward>(bench, to_cross_forward_variant(p), bin);
  };
  k.verify_set = [&](const ParameterSet& p, const gpu::RtcBinary& bin, const VerificationSet& s) {
    CrossForwardBench b(cross_shape(o, op), kVerificationBatch, s.seed);
    return LoadedCrossForward(b, to_cross_forward_variant(p), bin).verify();
  };
  return search(o, dev, k, store, log, deadline, progress);
}

nlohmann::json tune_cross_backward(const TuneOptions& o, const DeviceFacts& dev, DType op, WinnersStore& store,
                                   AttemptLog& log, Clock::time_point deadline, std::ostream& progress) {
  CrossBackwardBench bench(cross_shape(o, op), o.batch, fresh_seed());
  const CrossWorkload w = bench.workload();
  progress << kCrossBackwardKernel << " [" << w.shape.key() << "]: " << bench.describe() << "\n";
  const CrossBackwardLaunch builtin = [](const kernels::CrossShape& s, const kernels::CrossBackward& a, void* ws,
                                         std::size_t bytes, gpu::stream_t st) {
    kernels::cross_backward(s, a, ws, bytes, st);
  };
  const ForwardCheck check = bench.verify(builtin);
  if (!check.ok) throw InternalError("cross backward: the built-in kernel fails its reference: " + check.reason);

  KernelProblem k;
  k.kernel = kCrossBackwardKernel;
  k.shape = w.shape.key();
  k.workload = bench.describe();
  k.header = kernels::kCrossNetKernelHeader;
  k.signature = "template <class Op, int VEC, int COL_THREADS, int ROW_GROUPS, int CHUNK_ROWS> __global__ void "
                "cross_backward_chunk_kernel(float* g, const Op* h, const float* x0, const Op* z, float* acc, bool "
                "accumulate, float* dx0, Op* dz, int64_t rows, int64_t cols, float* partial, bool vector_ok) in "
                "namespace hetrec::kernels, a one-dimensional grid of ceil(cols / (COL_THREADS x VEC)) x "
                "ceil(rows / CHUNK_ROWS) blocks of COL_THREADS x ROW_GROUPS threads writing partial[chunk * cols + c] "
                "(the chunk's sum of dz in fp32); keep cross_forward_kernel unchanged";
  k.floor_us = cross_backward_floor_us(o.hw, w);
  k.default_us = bench.median_us(builtin, o.reps);
  k.default_params = cross_backward_parameters(kernels::kDefaultCrossBackwardVariant);
  k.space = cross_backward_space();
  k.static_problem = [&](const ParameterSet& p) { return cross_backward_static_problem(o.hw, w, p); };
  k.rank = [&](const ParameterSet& p) { return cross_backward_rank(o.hw, w, p); };
  k.block_threads = [](const ParameterSet& p) { return to_cross_backward_variant(p).block_threads(); };
  k.dynamic_shared_bytes = [](const ParameterSet&) { return std::size_t{0}; };
  k.program = [&](const ParameterSet& p, const std::string& header) {
    return kernels::cross_backward_program(w.shape, to_cross_backward_variant(p), header);
  };
  k.load = [&](const ParameterSet& p, const gpu::RtcBinary& bin) -> std::unique_ptr<LoadedCandidate> {
    return std::make_unique<LoadedCrossBackward>(bench, to_cross_backward_variant(p), bin);
  };
  k.verify_set = [&](const ParameterSet& p, const gpu::RtcBinary& bin, const VerificationSet& s) {
    CrossBackwardBench b(cross_shape(o, op), kVerificationBatch, s.seed);
    return LoadedCrossBackward(b, to_cross_backward_variant(p), bin).verify();
  };
  return search(o, dev, k, store, log, deadline, progress);
}

// ---- the small GEMMs (baseline: cuBLASLt, as the engine runs them) ----

class LoadedSmallGemm final : public LoadedCandidate {
 public:
  LoadedSmallGemm(SmallGemmBench& bench, const kernels::SmallGemmVariant& v, const gpu::RtcBinary& bin,
                  const gpu::RtcBinary& finish)
      : bench_(bench), kernel_(bench.workload().shape, v, bin, finish) {}
  gpu::KernelResources resources() const override { return kernel_.resources(); }
  ForwardCheck verify() override { return bench_.verify(launch(), kernel_.workspace_floats()); }
  double median_us(int reps) override { return bench_.median_us(launch(), reps, kernel_.workspace_floats()); }

 private:
  SmallGemmLaunch launch() const {
    return [this](const kernels::SmallGemmArgs& g, gpu::stream_t s) { kernel_.launch(g, s); };
  }
  SmallGemmBench& bench_;
  kernels::TunedSmallGemm kernel_;
};

nlohmann::json tune_small_gemm(const TuneOptions& o, const DeviceFacts& dev, const kernels::SmallGemmShape& shape,
                               WinnersStore& store, AttemptLog& log, Clock::time_point deadline,
                               std::ostream& progress) {
  SmallGemmBench bench(shape, o.batch, fresh_seed(), o.rotations);
  const SmallGemmWorkload w = bench.workload();
  progress << kSmallGemmKernel << " [" << shape.key() << "]: " << bench.describe() << "\n";
  // The baseline is what the engine runs without a winner: cuBLASLt's heuristic choice.
  gpu::CachingDeviceAllocator allocator(gpu::current_device());
  cublaslt::Gemm gemm(allocator);
  const cublaslt::Problem problem = bench.cublas_problem();
  const SmallGemmLaunch builtin = [&](const kernels::SmallGemmArgs& g, gpu::stream_t s) {
    gemm.run(problem, bench.cublas_operands(g), s);
  };
  const ForwardCheck check = bench.verify(builtin);
  if (!check.ok) progress << kSmallGemmKernel << " [" << shape.key() << "]: cuBLASLt misses the bound: " << check.reason << "\n";
  // One second-pass binary serves every reduce candidate.
  const gpu::RtcBinary finish =
      shape.kind == kernels::SmallGemmKind::reduce
          ? gpu::rtc_compile(kernels::small_gemm_finish_program(), dev.props.compute_major, dev.props.compute_minor)
          : gpu::RtcBinary{};

  KernelProblem k;
  k.kernel = kSmallGemmKernel;
  k.shape = shape.key();
  k.workload = bench.describe();
  k.header = "kernels/small_gemm_kernel.cuh";
  k.signature = "the templates small_gemm_rows, small_gemm_outer, small_gemm_reduce and the kernel "
                "small_gemm_reduce_finish in namespace hetrec::kernels with their template parameters, arguments and "
                "shared-memory sizes as documented at the top of the header";
  k.source_hash = kernels::small_gemm_sources_hash();
  k.floor_us = small_gemm_floor_us(o.hw, w);
  k.default_us = bench.median_us(builtin, o.reps);
  k.default_params = small_gemm_parameters(kernels::default_small_gemm_variant(shape));
  k.space = small_gemm_space(shape.kind);
  k.static_problem = [&](const ParameterSet& p) { return small_gemm_static_problem(o.hw, w, p); };
  k.rank = [&](const ParameterSet& p) {
    return std::make_pair(small_gemm_predicted_us(o.hw, w, p), small_gemm_issue_us(o.hw, w, p));
  };
  k.block_threads = [&](const ParameterSet& p) {
    return kernels::small_gemm_block_threads(shape, to_small_gemm_variant(p));
  };
  k.dynamic_shared_bytes = [&](const ParameterSet& p) {
    return kernels::small_gemm_shared_bytes(shape, to_small_gemm_variant(p));
  };
  k.program = [&](const ParameterSet& p, const std::string& header) {
    return kernels::small_gemm_program(shape, to_small_gemm_variant(p), header);
  };
  k.load = [&](const ParameterSet& p, const gpu::RtcBinary& bin) -> std::unique_ptr<LoadedCandidate> {
    return std::make_unique<LoadedSmallGemm>(bench, to_small_gemm_variant(p), bin, finish);
  };
  k.verify_set = [&](const ParameterSet& p, const gpu::RtcBinary& bin, const VerificationSet& s) {
    SmallGemmBench b(shape, kVerificationBatch, s.seed, 1);
    return LoadedSmallGemm(b, to_small_gemm_variant(p), bin, finish).verify();
  };
  nlohmann::json r = search(o, dev, k, store, log, deadline, progress);
  r["baseline"] = "cuBLASLt heuristic";
  r["baseline_verified"] = check.ok;
  return r;
}

}  // namespace

std::vector<std::string> tunable_kernels() {
  return {kEmbeddingForwardKernel, kDotForwardKernel, kSparseUpdateKernel, kDotBackwardKernel, kCrossForwardKernel,
          kCrossBackwardKernel, kSmallGemmKernel};
}

nlohmann::json run_tuning(const TuneOptions& o, std::ostream& progress) {
  std::vector<std::string> kernels = o.kernels;
  if (std::find(kernels.begin(), kernels.end(), "all") != kernels.end()) kernels = tunable_kernels();
  const std::vector<std::string> known = tunable_kernels();
  for (const std::string& k : kernels)
    if (std::find(known.begin(), known.end(), k) == known.end()) {
      std::string names;
      for (const std::string& n : known) names += n + ", ";
      throw ConfigError("--kernel " + k + ": no variant space for this kernel; tunable: " + names + "all");
    }
  // Configuration first, so that a bad endpoint or winners file is reported as such on
  // any machine: the proposer's URL and key rule (tune/model_proposer.h), the winners
  // file's schema, hashes and bounds (tune/winners.h).
  (void)model_endpoint_from_env();
  WinnersStore store = WinnersStore::load(o.winners_path);
  if (gpu::device_count() == 0) throw DeviceError("hetrec tune: no GPU is visible; tuning measures on the device");
  const auto start = Clock::now();
  const auto deadline =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.budget_minutes * 60.0));
  DeviceFacts dev{gpu::device_properties(gpu::current_device()), gpu::driver_version()};
  // The description must be this device's ("NVIDIA H200 SXM" for "NVIDIA H200"): its
  // bandwidth makes the floors and its limits the occupancy.
  if (o.hw.display_name.rfind(dev.props.name, 0) != 0)
    throw ConfigError("--hw " + o.hw.name + " describes '" + o.hw.display_name + "', but the device is '" +
                      dev.props.name + "': name its description (hetrec hw list)");
  if (dev.props.warp_size != o.hw.warp_size)
    throw ConfigError("hardware description '" + o.hw.name + "' has warp size " + std::to_string(o.hw.warp_size) +
                      ", the device " + std::to_string(dev.props.warp_size));

  // One job per (kernel, shape); each gets an equal share of what is left of the budget.
  std::vector<std::function<nlohmann::json(Clock::time_point)>> jobs;
  std::filesystem::create_directories(o.out_dir);
  const std::string stamp = utc_time("%Y%m%d-%H%M%S");
  AttemptLog log(o.out_dir + "/tune-attempts-" + stamp + ".jsonl");
  for (const std::string& k : kernels) {
    if (k == kEmbeddingForwardKernel)
      for (DType rows : o.row_dtypes)
        jobs.push_back([&, rows](Clock::time_point d) {
          return tune_embedding_forward(o, dev, rows, store, log, d, progress);
        });
    if (k == kDotForwardKernel)
      jobs.push_back([&](Clock::time_point d) { return tune_dot_forward(o, dev, store, log, d, progress); });
    if (k == kSparseUpdateKernel)
      for (DType rows : o.row_dtypes)
        jobs.push_back([&, rows](Clock::time_point d) {
          return tune_sparse_update(o, dev, rows, store, log, d, progress);
        });
    if (k == kDotBackwardKernel)
      jobs.push_back([&](Clock::time_point d) { return tune_dot_backward(o, dev, store, log, d, progress); });
    if (k == kCrossForwardKernel)
      for (DType op : o.cross_operand_dtypes)
        jobs.push_back([&, op](Clock::time_point d) { return tune_cross_forward(o, dev, op, store, log, d, progress); });
    if (k == kCrossBackwardKernel)
      for (DType op : o.cross_operand_dtypes)
        jobs.push_back([&, op](Clock::time_point d) { return tune_cross_backward(o, dev, op, store, log, d, progress); });
    if (k == kSmallGemmKernel)
      for (const kernels::SmallGemmShape& shape : o.small_gemm_shapes)
        jobs.push_back([&, shape](Clock::time_point d) {
          return tune_small_gemm(o, dev, shape, store, log, d, progress);
        });
  }
  nlohmann::json shapes = nlohmann::json::array();
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const auto left = deadline - Clock::now();
    shapes.push_back(jobs[i](Clock::now() + left / static_cast<long>(jobs.size() - i)));
    if (!o.winners_path.empty()) {
      const auto parent = std::filesystem::path(o.winners_path).parent_path();
      if (!parent.empty()) std::filesystem::create_directories(parent);
      store.save(o.winners_path);
    }
  }
  const char* commit = std::getenv("HETREC_COMMIT");
  nlohmann::json results = {
      {"date", utc_time("%Y-%m-%dT%H:%M:%SZ")},
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
       "embedding backward's preparation (sort keys, segments, chunk sums of long rows), "
       "BCE loss, dense optimizer, radix sort, scan: not declared"},
      {"shapes", shapes}};
  const std::string results_path = o.out_dir + "/tune-" + stamp + ".json";
  results["results_file"] = results_path;
  std::ofstream f(results_path);
  f << results.dump(2) << '\n';
  if (!f) throw IoError("hetrec tune: cannot write " + results_path);
  return results;
}

}  // namespace hetrec::tune
