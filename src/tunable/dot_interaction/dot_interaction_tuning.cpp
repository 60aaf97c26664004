// The tuner's adapter of the dot interaction forward:
// kernel, variant space, cost model and bench bound into KernelProblems, one per shape.
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "tunable/dot_interaction/dot_interaction.h"
#include "tunable/dot_interaction/dot_interaction_tuned.h"
#include "tunable/dot_interaction/dot_interaction_cost.h"
#include "tunable/dot_interaction/dot_interaction_bench.h"
#include "tune/gpu/kernel_search.h"

namespace hetrec::tune {
namespace {

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
                                Clock::duration budget, std::ostream& progress) {
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
  k.header = "tunable/dot_interaction/dot_interaction_kernel.cuh";
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
  return search(o, dev, k, store, log, budget, progress);
}

}  // namespace

static TunableFamily dot_forward_family() {
  return {kDotForwardKernel, [](const TuningContext& c) {
    std::vector<TuningJob> jobs;
    jobs.push_back([c](Clock::duration d) { return tune_dot_forward(c.options, c.device, c.store, c.log, d, c.progress); });
    return jobs;
  }};
}

TunableFamily dot_backward_family();  // the backward's adapter, in dot_backward_tuning.cpp

// This folder's adapters in the tuner's registry (tune/gpu/kernel_search.h).
void add_dot_interaction_tuning(std::vector<TunableFamily>& out) {
  out.push_back(dot_forward_family());
  out.push_back(dot_backward_family());
}

}  // namespace hetrec::tune
