// CUDA only, as the model selection whose shortlist it times (gemm/cublaslt_model_choice.h).
#if defined(HETREC_WITH_CUDA)
#include "gemm/cublaslt_shortlist_timing.h"

#include <functional>

#include "core/error.h"
#include "gpu/blaslt.h"
#include "gpu/launch_timing.h"
#include "gpu/stream.h"

namespace hetrec::inline gemm::cublaslt {

std::optional<std::vector<double>> time_shortlist(cublasLtHandle_t handle, const Problem& p,
                                                  const MatmulDescriptors& desc, const Operands& o,
                                                  const std::vector<cublasLtMatmulAlgo_t>& algos, void* workspace,
                                                  std::size_t workspace_bytes, gpu::stream_t stream,
                                                  Allocator& scratch_allocator) {
  if (algos.empty() || gpu::capturing(stream)) return std::nullopt;
  // D as the launches write it: the caller's, or a scratch one where the call reads D.
  Tensor scratch;
  void* d = o.d;
  if (o.beta != 0.0f) {
    const std::size_t bytes = static_cast<std::size_t>((p.m - 1) * p.ldd + p.n) * dtype_size(p.d_type);
    if (bytes > kMaxScratchBytes) return std::nullopt;
    try {
      scratch = Tensor::empty({static_cast<int64_t>(bytes)}, DType::u8, scratch_allocator);
    } catch (const OutOfMemoryError&) {
      return std::nullopt;
    }
    d = scratch.raw();
  }
  set_operand_pointers(p, o, desc.desc);
  const auto launch = [&](const cublasLtMatmulAlgo_t& algo) {
    HETREC_BLAS_CHECK(cublasLtMatmul(handle, desc.desc, &o.alpha, o.b, desc.a, o.a, desc.b, &o.beta, d, desc.d, d,
                                     desc.d, &algo, workspace, workspace_bytes, stream));
  };
  std::vector<std::function<void()>> launches;
  for (const cublasLtMatmulAlgo_t& algo : algos) launches.push_back([&launch, &algo] { launch(algo); });
  return gpu::time_launches(launches, stream);
}

}  // namespace hetrec::gemm::cublaslt
#endif
