// The tuner's adapter of the embedding backward's fused sparse update:
// kernel, variant space, cost model and bench bound into KernelProblems, one per shape.
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "kernels/embedding_bag_backward.h"
#include "tunable/sparse_update/sparse_update_tuned.h"
#include "tunable/sparse_update/sparse_update_cost.h"
#include "tunable/sparse_update/sparse_update_bench.h"
#include "tune/gpu/kernel_search.h"

namespace hetrec::tune {
namespace {

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
                                  AttemptLog& log, Clock::duration budget, std::ostream& progress) {
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
  k.header = "tunable/sparse_update/sparse_update_kernel.cuh";
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
  return search(o, dev, k, store, log, budget, progress);
}

}  // namespace

static TunableFamily sparse_update_family() {
  return {kSparseUpdateKernel, [](const TuningContext& c) {
    std::vector<TuningJob> jobs;
    for (DType rows : c.options.row_dtypes)
      jobs.push_back([c, rows](Clock::duration d) { return tune_sparse_update(c.options, c.device, rows, c.store, c.log, d, c.progress); });
    return jobs;
  }};
}

// This folder's adapters in the tuner's registry (tune/gpu/kernel_search.h).
void add_sparse_update_tuning(std::vector<TunableFamily>& out) {
  out.push_back(sparse_update_family());
}

}  // namespace hetrec::tune
