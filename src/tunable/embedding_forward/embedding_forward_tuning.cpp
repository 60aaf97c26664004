// The tuner's adapter of the embedding forward:
// kernel, variant space, cost model and bench bound into KernelProblems, one per shape.
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "tunable/embedding_forward/embedding_bag_forward.h"
#include "tunable/embedding_forward/embedding_forward_tuned.h"
#include "tunable/embedding_forward/embedding_forward_cost.h"
#include "tunable/embedding_forward/embedding_forward_bench.h"
#include "tune/gpu/kernel_search.h"

namespace hetrec::tune {
namespace {

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
                                      WinnersStore& store, AttemptLog& log, Clock::duration budget,
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
  k.header = "tunable/embedding_forward/embedding_bag_forward_kernel.cuh";
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
  return search(o, dev, k, store, log, budget, progress);
}

}  // namespace

static TunableFamily embedding_forward_family() {
  return {kEmbeddingForwardKernel, [](const TuningContext& c) {
    std::vector<TuningJob> jobs;
    for (DType rows : c.options.row_dtypes)
      jobs.push_back([c, rows](Clock::duration d) { return tune_embedding_forward(c.options, c.device, rows, c.store, c.log, d, c.progress); });
    return jobs;
  }};
}

// This folder's adapters in the tuner's registry (tune/gpu/kernel_search.h).
void add_embedding_forward_tuning(std::vector<TunableFamily>& out) {
  out.push_back(embedding_forward_family());
}

}  // namespace hetrec::tune
