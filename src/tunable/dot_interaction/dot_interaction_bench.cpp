#include "tunable/dot_interaction/dot_interaction_bench.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/rng.h"
#include "gpu/event.h"
#include "tune/gpu/median_launch_time.h"
#include "gpu/memory.h"

namespace hetrec::tune {

namespace {
// fp32 unit roundoff: a D-term dot product accumulated in fp32 (fma) is within
// D * u * sum|x_k y_k| of the exact value (Higham, 2nd ed., section 3.1); twice that.
constexpr double kFp32UnitRoundoff = 0x1.0p-24;
}  // namespace

DotForwardBench::DotForwardBench(const kernels::DotForwardShape& shape, int64_t batch, uint64_t seed, int rotations) {
  if (shape.num_features < 1 || shape.dim < 1 || batch < 1 || rotations < 1)
    throw ConfigError("tune: the dot interaction workload needs features, a row width, a batch and rotations");
  workload_.shape = shape;
  workload_.batch = batch;
  const std::size_t per_sample = static_cast<std::size_t>(shape.num_features) * shape.dim;
  std::vector<float> host(static_cast<std::size_t>(batch) * per_sample);
  for (int r = 0; r < rotations; ++r) {
#pragma omp parallel for schedule(static)
    for (int64_t s = 0; s < batch; ++s) {
      Rng rng(seed, static_cast<uint64_t>(r) * static_cast<uint64_t>(batch) + static_cast<uint64_t>(s));
      float* x = &host[static_cast<std::size_t>(s) * per_sample];
      for (std::size_t e = 0; e < per_sample; ++e) x[e] = static_cast<float>(2.0 * rng.uniform() - 1.0);
    }
    features_.emplace_back(host.size() * sizeof(float));
    gpu::memcpy_sync(features_.back().get(), host.data(), host.size() * sizeof(float), gpu::CopyKind::host_to_device);
    if (r == 0) host_features_ = host;
  }
  out_ = gpu::DeviceBuffer(static_cast<std::size_t>(batch) * width() * sizeof(float));

  const int F = shape.num_features, D = shape.dim, W = width();
  reference_.assign(static_cast<std::size_t>(batch) * W, 0.0);
  error_bound_.assign(reference_.size(), 0.0);
#pragma omp parallel for schedule(static)
  for (int64_t s = 0; s < batch; ++s) {
    const float* x = &host_features_[static_cast<std::size_t>(s) * per_sample];
    double* ref = &reference_[static_cast<std::size_t>(s) * W];
    double* bound = &error_bound_[static_cast<std::size_t>(s) * W];
    for (int k = 0; k < D; ++k) ref[k] = x[k];  // exact copy: bound 0
    int p = 0;
    for (int i = 0; i < F; ++i)
      for (int j = 0; j < (shape.self ? i + 1 : i); ++j, ++p) {
        double acc = 0.0, mag = 0.0;
        for (int k = 0; k < D; ++k) {
          const double v = static_cast<double>(x[i * D + k]) * x[j * D + k];
          acc += v;
          mag += std::fabs(v);
        }
        ref[D + p] = acc;
        bound[D + p] = 2.0 * (D + 1) * kFp32UnitRoundoff * mag;
      }
  }
}

std::string DotForwardBench::describe() const {
  char buf[256];
  std::snprintf(buf, sizeof buf, "batch %lld, %s, %d pairs, %.3f GB through HBM at least, %.2f GFLOP",
                static_cast<long long>(workload_.batch), workload_.shape.key().c_str(), workload_.pairs(),
                dot_forward_bytes(workload_) / 1e9, dot_forward_flops(workload_) / 1e9);
  return buf;
}

kernels::DotInteractionShape DotForwardBench::shape() const {
  kernels::DotInteractionShape s;
  s.batch = workload_.batch;
  s.num_features = workload_.shape.num_features;
  s.dim = workload_.shape.dim;
  s.self = workload_.shape.self;
  return s;
}

ForwardCheck DotForwardBench::verify(const DotLaunch& launch) {
  ForwardCheck c;
  const int64_t stride = static_cast<int64_t>(workload_.shape.num_features) * workload_.shape.dim;
  gpu::memset_async(out_.get(), 0xFF, out_.bytes(), stream_.get());  // NaN everywhere
  launch(shape(), features_[0].as<float>(), stride, out_.as<float>(), width(), stream_.get());
  stream_.synchronize();
  if (host_out_.empty()) host_out_ = gpu::PinnedBuffer(out_.bytes());
  gpu::memcpy_sync(host_out_.get(), out_.get(), out_.bytes(), gpu::CopyKind::device_to_host);
  const float* got = host_out_.as<float>();
  int64_t first_bad = -1;
  double max_err = 0.0;
  const int64_t n = static_cast<int64_t>(out_.bytes() / sizeof(float));
#pragma omp parallel for schedule(static) reduction(max : max_err)
  for (int64_t i = 0; i < n; ++i) {
    const double err = std::fabs(static_cast<double>(got[i]) - reference_[i]);
    max_err = std::max(max_err, std::isfinite(err) ? err : INFINITY);
    if (!(err <= error_bound_[i])) {
#pragma omp critical(hetrec_dot_verify)
      if (first_bad < 0 || i < first_bad) first_bad = i;
    }
  }
  c.max_abs_error = max_err;
  if (first_bad >= 0) {
    char buf[256];
    std::snprintf(buf, sizeof buf, "sample %lld column %lld: got %.9g, reference %.9g (bound %.3g)",
                  static_cast<long long>(first_bad / width()), static_cast<long long>(first_bad % width()),
                  static_cast<double>(got[first_bad]), reference_[first_bad], error_bound_[first_bad]);
    c.reason = std::string("differs from the reference: ") + buf;
    return c;
  }
  c.ok = true;
  return c;
}

double DotForwardBench::median_us(const DotLaunch& launch, int reps) {
  const int64_t stride = static_cast<int64_t>(workload_.shape.num_features) * workload_.shape.dim;
  return median_launch_us(stream_, reps, [&](int i) {
    const gpu::DeviceBuffer& in = i < 0 ? features_.back() : features_[static_cast<std::size_t>(i) % features_.size()];
    launch(shape(), in.as<float>(), stride, out_.as<float>(), width(), stream_.get());
  });
}

}  // namespace hetrec::tune
