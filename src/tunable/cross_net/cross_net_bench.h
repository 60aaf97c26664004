#pragma once
// The cross net's element-wise passes on one workload on the device, for the tuner's
// gate: random layer inputs (uniform in [-1, 1]; the operands z and h drawn in fp32 and
// rounded to the operand type, as the GEMMs write them) at the config's width and
// --batch, and a check of every output against a double-precision host reference. Each
// matrix is far larger than the L2 (at the MLPerf size 131072 x 3456 elements, 1.8 GB in
// fp32), so one input set serves every timed launch without L2 hits between launches.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "gpu/device_buffer.h"
#include "gpu/stream.h"
#include "tunable/cross_net/cross_net.h"
#include "tunable/cross_net/cross_net_cost.h"
#include "tunable/embedding_forward/embedding_forward_bench.h"

namespace hetrec::tune {

using CrossForwardLaunch = std::function<void(const kernels::CrossShape&, const float* x0, const float* x,
                                              const void* z, float* out, void* out_op, DType op_type,
                                              gpu::stream_t)>;
using CrossBackwardLaunch = std::function<void(const kernels::CrossShape&, const kernels::CrossBackward&,
                                               void* workspace, std::size_t workspace_bytes, gpu::stream_t)>;

// A batch x width matrix on the host in fp32 or an operand type (raw 16-bit patterns),
// with its exact fp32 values.
struct HostCrossMatrix {
  DType type = DType::f32;
  std::vector<float> f32;       // type f32
  std::vector<uint16_t> bits;   // type bf16 / f16
  float at(std::size_t i) const;
  const void* data() const { return type == DType::f32 ? static_cast<const void*>(f32.data()) : bits.data(); }
  std::size_t bytes() const { return type == DType::f32 ? f32.size() * sizeof(float) : bits.size() * sizeof(uint16_t); }
};

class CrossForwardBench {
 public:
  CrossForwardBench(const kernels::CrossNetShape& shape, int64_t batch, uint64_t seed);

  const CrossWorkload& workload() const { return workload_; }
  std::string describe() const;

  // Poisons out and (16-bit) out_op with NaN, runs `launch` and compares every element
  // bit for bit with the exact x0 * z + x rounded once to fp32 (std::fma), and the
  // operand copy with that rounded to nearest even in the operand type.
  ForwardCheck verify(const CrossForwardLaunch& launch);
  double median_us(const CrossForwardLaunch& launch, int reps);

 private:
  void run(const CrossForwardLaunch& launch);

  CrossWorkload workload_;
  gpu::Stream stream_;
  HostCrossMatrix x0_, x_, z_;
  gpu::DeviceBuffer d_x0_, d_x_, d_z_, d_out_, d_out_op_;
  gpu::PinnedBuffer host_out_, host_out_op_;  // the outputs as copied back for verification
};

class CrossBackwardBench {
 public:
  CrossBackwardBench(const kernels::CrossNetShape& shape, int64_t batch, uint64_t seed);

  const CrossWorkload& workload() const { return workload_; }
  std::string describe() const;

  // Runs `launch` on each kind of pass (checked_passes; the timed one on every row, the
  // others on the first 4099 rows), each on restored g and acc and
  // NaN-poisoned outputs, and checks every output against the double-precision reference
  // within its fp32 rounding bound (2 k u sum of its terms' magnitudes, k the roundings on
  // its path, u = 2^-24; dz adds the operand type's rounding), what a pass must not write
  // bit for bit, and each bias-gradient column within the fp32 summation bound
  // 2 (L + 1 + k) u sum_r |G x0| with L the longest addition chain of any variant
  // (kernels::cross_backward_sum_chain).
  ForwardCheck verify(const CrossBackwardLaunch& launch);
  // Times the tuned pass (cross_backward_tuned_pass: it writes only dz, dx0 and the bias
  // gradient, so launches repeat on the same inputs).
  double median_us(const CrossBackwardLaunch& launch, int reps);

  // The passes verify() checks.
  static std::vector<kernels::CrossBackwardPass> checked_passes();

 private:
  kernels::CrossBackward args(const kernels::CrossBackwardPass& p) const;
  ForwardCheck check(const kernels::CrossBackwardPass& p, int64_t rows);  // the first `rows` rows

  CrossWorkload workload_;
  gpu::Stream stream_;
  HostCrossMatrix g_, x0_, acc_;
  std::vector<HostCrossMatrix> h_, z_;  // kMaxCrossTerms terms, kMaxCrossTerms + 1 z's
  gpu::DeviceBuffer d_g0_, d_acc0_, d_g_, d_x0_, d_acc_, d_dz_, d_dx0_, d_bias_, d_workspace_;
  std::vector<gpu::DeviceBuffer> d_h_, d_z_;
  gpu::PinnedBuffer host_g_, host_acc_, host_dx0_, host_dz_, host_bias_;  // outputs copied back
};

}  // namespace hetrec::tune
