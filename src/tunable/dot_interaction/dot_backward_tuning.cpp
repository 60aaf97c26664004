// The tuner's adapter of the dot interaction backward:
// kernel, variant space, cost model and bench bound into KernelProblems, one per shape.
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "tunable/dot_interaction/dot_interaction.h"
#include "tunable/dot_interaction/dot_interaction_backward_tuned.h"
#include "tunable/dot_interaction/dot_backward_cost.h"
#include "tunable/dot_interaction/dot_backward_bench.h"
#include "tune/gpu/kernel_search.h"

namespace hetrec::tune {
namespace {

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
                                 Clock::duration budget, std::ostream& progress) {
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
  k.header = "tunable/dot_interaction/dot_interaction_backward_kernel.cuh";
  k.signature = "template <int BLOCK_THREADS, int SAMPLES_PER_BLOCK, int ROW_PAD, int ROWS_PER_THREAD> __global__ "
                "void dot_backward_kernel(const float* features, int64_t feature_stride, const float* dout, int64_t "
                "dout_stride, float* dfeatures, int64_t dfeature_stride, int64_t batch, int num_features, int dim, "
                "bool self) in namespace hetrec::kernels, dynamic shared memory SAMPLES_PER_BLOCK x (num_features x "
                "(dim + ROW_PAD) + num_features x (num_features + ROW_PAD)) floats; it may use dot_pair_of and "
                "dot_load_features of tunable/dot_interaction/dot_interaction_kernel.cuh";
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
  return search(o, dev, k, store, log, budget, progress);
}

}  // namespace

TunableFamily dot_backward_family() {
  return {kDotBackwardKernel, [](const TuningContext& c) {
    std::vector<TuningJob> jobs;
    jobs.push_back([c](Clock::duration d) { return tune_dot_backward(c.options, c.device, c.store, c.log, d, c.progress); });
    return jobs;
  }};
}

}  // namespace hetrec::tune
