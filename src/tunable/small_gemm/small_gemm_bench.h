#pragma once
// One small GEMM (tunable/small_gemm/small_gemm_variant.h) on the device, for the tuner's gate and
// the comparison bench: random operands in [-1, 1] (rounded to the operand type), one
// set per rotation so that timed launches do not find the previous one's data in L2, a
// double-precision host reference of the first set with an fp32 summation bound per
// output, and the same GEMM as cuBLASLt runs it in the engine.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "gemm/cublaslt_gemm.h"
#include "gpu/device_buffer.h"
#include "gpu/stream.h"
#include "tunable/small_gemm/small_gemm_tuned.h"
#include "tunable/embedding_forward/embedding_forward_bench.h"
#include "tunable/small_gemm/small_gemm_cost.h"

namespace hetrec::tune {

using SmallGemmLaunch = std::function<void(const kernels::SmallGemmArgs&, gpu::stream_t)>;

class SmallGemmBench {
 public:
  // ld_multiple: every row stride is the row's width rounded up to a multiple of this
  // (1: contiguous, as the engine's operands are); the padding of C must stay untouched.
  SmallGemmBench(const kernels::SmallGemmShape& shape, int64_t m, uint64_t seed, int rotations, int ld_multiple = 1);

  const SmallGemmWorkload& workload() const { return workload_; }
  std::string describe() const;
  gpu::stream_t stream() const { return stream_.get(); }

  // The operands of rotation r (the workspace grown to `workspace_floats` first).
  kernels::SmallGemmArgs args(int rotation, std::size_t workspace_floats = 0);

  // Poisons C (NaN), runs `launch` on the first operand set and compares every output
  // with the reference: |got - exact| <= 2 (n + 2) 2^-24 (sum_k |a_k b_k| + |bias|), n the
  // length of the reduction (Higham, 2nd ed., section 3.1, for any summation order, with
  // one more rounding for the bias, doubled), after the ReLU where the epilogue has one;
  // C's row padding must still hold the poison.
  ForwardCheck verify(const SmallGemmLaunch& launch, std::size_t workspace_floats = 0);
  // Median device time of `reps` launches (us), each on the next operand set.
  double median_us(const SmallGemmLaunch& launch, int reps, std::size_t workspace_floats = 0);

  // The same GEMM as the engine hands it to cuBLASLt (fp32 or 16-bit operands, fp32 D,
  // the bias epilogue of the shape), and its operands for rotation r's arguments.
  cublaslt::Problem cublas_problem() const;
  cublaslt::Operands cublas_operands(const kernels::SmallGemmArgs& args) const;

 private:
  struct Strides {
    int64_t lda, ldb, ldc, c_rows, c_cols;
  };
  Strides strides() const;

  SmallGemmWorkload workload_;
  int ld_multiple_ = 1;
  gpu::Stream stream_;
  std::vector<gpu::DeviceBuffer> a_, b_;
  gpu::DeviceBuffer c_, bias_, workspace_;
  std::vector<double> reference_, error_bound_;
  gpu::PinnedBuffer host_c_;
};

}  // namespace hetrec::tune
