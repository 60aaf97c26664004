// The tuner's adapter of the cross net's element-wise passes: kernel, variant space, cost
// model and bench bound into KernelProblems, one per shape. The family's kernel, model and
// bench stay where they are (kernels/cross_net*, tune/cross_net_cost.*, tune/gpu/cross_net_bench.*).
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "tunable/cross_net/cross_net.h"
#include "tunable/cross_net/cross_net_tuned.h"
#include "tunable/cross_net/cross_net_cost.h"
#include "tunable/cross_net/cross_net_bench.h"
#include "tune/gpu/kernel_search.h"

namespace hetrec::tune {
namespace {

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
                                  AttemptLog& log, Clock::duration budget, std::ostream& progress) {
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
  return search(o, dev, k, store, log, budget, progress);
}

nlohmann::json tune_cross_backward(const TuneOptions& o, const DeviceFacts& dev, DType op, WinnersStore& store,
                                   AttemptLog& log, Clock::duration budget, std::ostream& progress) {
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
                "cross_backward_chunk_kernel(float* g, const Op* h0, const Op* h1, const Op* h2, int terms, const "
                "float* x0, const Op* z0, const Op* z1, const Op* z2, const Op* z3, int direct_terms, int "
                "direct_first, float* acc, bool accumulate, bool checkpoint, float* dx0, Op* dz, int64_t rows, "
                "int64_t cols, float* partial, bool vector_ok) in "
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
  return search(o, dev, k, store, log, budget, progress);
}

}  // namespace

static TunableFamily cross_forward_family() {
  return {kCrossForwardKernel, [](const TuningContext& c) {
    std::vector<TuningJob> jobs;
    for (DType op : c.options.cross_operand_dtypes)
      jobs.push_back([c, op](Clock::duration d) { return tune_cross_forward(c.options, c.device, op, c.store, c.log, d, c.progress); });
    return jobs;
  }};
}

static TunableFamily cross_backward_family() {
  return {kCrossBackwardKernel, [](const TuningContext& c) {
    std::vector<TuningJob> jobs;
    for (DType op : c.options.cross_operand_dtypes)
      jobs.push_back([c, op](Clock::duration d) { return tune_cross_backward(c.options, c.device, op, c.store, c.log, d, c.progress); });
    return jobs;
  }};
}

// This folder's adapters in the tuner's registry (tune/gpu/kernel_search.h).
void add_cross_net_tuning(std::vector<TunableFamily>& out) {
  out.push_back(cross_forward_family());
  out.push_back(cross_backward_family());
}

}  // namespace hetrec::tune
