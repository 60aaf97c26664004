// The tuner's adapter of the small GEMMs (baseline: cuBLASLt, as the engine runs them):
// kernel, variant space, cost model and bench bound into KernelProblems, one per shape.
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "gemm/cublaslt_gemm.h"
#include "gpu/caching_allocator.h"
#include "tunable/small_gemm/small_gemm_sources.h"
#include "tunable/small_gemm/small_gemm_tuned.h"
#include "tunable/small_gemm/small_gemm_cost.h"
#include "tunable/small_gemm/small_gemm_bench.h"
#include "tune/gpu/kernel_search.h"

namespace hetrec::tune {
namespace {

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
                               WinnersStore& store, AttemptLog& log, Clock::duration budget,
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
  k.header = "tunable/small_gemm/small_gemm_kernel.cuh";
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
  nlohmann::json r = search(o, dev, k, store, log, budget, progress);
  r["baseline"] = "cuBLASLt heuristic";
  r["baseline_verified"] = check.ok;
  return r;
}

}  // namespace

static TunableFamily small_gemm_family() {
  return {kSmallGemmKernel, [](const TuningContext& c) {
    std::vector<TuningJob> jobs;
    for (const kernels::SmallGemmShape& shape : c.options.small_gemm_shapes)
      jobs.push_back([c, shape](Clock::duration d) { return tune_small_gemm(c.options, c.device, shape, c.store, c.log, d, c.progress); });
    return jobs;
  }};
}

// This folder's adapters in the tuner's registry (tune/gpu/kernel_search.h).
void add_small_gemm_tuning(std::vector<TunableFamily>& out) {
  out.push_back(small_gemm_family());
}

}  // namespace hetrec::tune
