#include "tunable/dot_interaction/dot_backward_bench.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/error.h"
#include "core/rng.h"
#include "gpu/memory.h"
#include "tune/gpu/median_launch_time.h"

namespace hetrec::tune {

namespace {
// fp32 unit roundoff: a sum of n terms accumulated in fp32 (fma) is within
// (n - 1) u sum|t| of the exact value (Higham, 2nd ed., section 3.1); twice that with
// n = F + 1 (the pass-through term and one term per feature).
constexpr double kFp32UnitRoundoff = 0x1.0p-24;
// Row streams of the random draws: features and output gradients of one sample differ.
constexpr uint64_t kDoutStream = 1;

// Uniform in [-1, 1) for every element of `rotation`'s batch, each sample from its own
// stream so that the draw does not depend on the thread count.
std::vector<float> uniform_batch(uint64_t seed, uint64_t stream, int rotation, int64_t batch, std::size_t width) {
  std::vector<float> host(static_cast<std::size_t>(batch) * width);
#pragma omp parallel for schedule(static)
  for (int64_t s = 0; s < batch; ++s) {
    Rng rng(seed + stream, static_cast<uint64_t>(rotation) * static_cast<uint64_t>(batch) + static_cast<uint64_t>(s));
    float* x = &host[static_cast<std::size_t>(s) * width];
    for (std::size_t e = 0; e < width; ++e) x[e] = static_cast<float>(2.0 * rng.uniform() - 1.0);
  }
  return host;
}

bool pass_through_sample(int64_t s) { return s % kDotBackwardPassThroughEvery == kDotBackwardPassThroughEvery - 1; }
}  // namespace

DotBackwardBench::DotBackwardBench(const kernels::DotForwardShape& shape, int64_t batch, uint64_t seed,
                                   int rotations) {
  if (shape.num_features < 1 || shape.dim < 1 || batch < 1 || rotations < 1)
    throw ConfigError("tune: the dot interaction backward workload needs features, a row width, a batch and rotations");
  workload_.shape = shape;
  workload_.batch = batch;
  const int F = shape.num_features, D = shape.dim;
  const auto fw = static_cast<std::size_t>(feature_width());
  const auto dw = static_cast<std::size_t>(dout_width());
  std::vector<float> host_features;
  for (int r = 0; r < rotations; ++r) {
    std::vector<float> x = uniform_batch(seed, 0, r, batch, fw);
    std::vector<float> g = uniform_batch(seed, kDoutStream, r, batch, dw);
    // The pass-through samples: no pair gradient involving feature 0 (pairs (i, 0), and
    // (0, 0) with self pairs).
    for (int64_t s = 0; s < batch; ++s) {
      if (!pass_through_sample(s)) continue;
      float* go = &g[static_cast<std::size_t>(s) * dw];
      int p = 0;
      for (int i = 0; i < F; ++i)
        for (int j = 0; j < (shape.self ? i + 1 : i); ++j, ++p)
          if (j == 0) go[D + p] = 0.0f;
    }
    features_.emplace_back(x.size() * sizeof(float));
    gpu::memcpy_sync(features_.back().get(), x.data(), x.size() * sizeof(float), gpu::CopyKind::host_to_device);
    dout_.emplace_back(g.size() * sizeof(float));
    gpu::memcpy_sync(dout_.back().get(), g.data(), g.size() * sizeof(float), gpu::CopyKind::host_to_device);
    if (r == 0) {
      host_features = std::move(x);
      host_dout_ = std::move(g);
    }
  }
  dfeatures_ = gpu::DeviceBuffer(static_cast<std::size_t>(batch) * fw * sizeof(float));

  // dx_i[k] = [i == 0] dout[k] + sum_j G[i][j] x_j[k], G the symmetric pair-gradient
  // matrix (2 dout of a self pair on the diagonal), in double.
  reference_.assign(static_cast<std::size_t>(batch) * fw, 0.0);
  error_bound_.assign(reference_.size(), 0.0);
#pragma omp parallel for schedule(static)
  for (int64_t s = 0; s < batch; ++s) {
    const float* x = &host_features[static_cast<std::size_t>(s) * fw];
    const float* go = &host_dout_[static_cast<std::size_t>(s) * dw];
    std::vector<double> G(static_cast<std::size_t>(F) * F, 0.0);
    int p = 0;
    for (int i = 0; i < F; ++i)
      for (int j = 0; j < (shape.self ? i + 1 : i); ++j, ++p) {
        const double v = go[D + p];
        if (i == j) {
          G[static_cast<std::size_t>(i) * F + i] = 2.0 * v;
        } else {
          G[static_cast<std::size_t>(i) * F + j] = v;
          G[static_cast<std::size_t>(j) * F + i] = v;
        }
      }
    double* ref = &reference_[static_cast<std::size_t>(s) * fw];
    double* bound = &error_bound_[static_cast<std::size_t>(s) * fw];
    for (int i = 0; i < F; ++i)
      for (int k = 0; k < D; ++k) {
        double acc = i == 0 ? go[k] : 0.0;
        double mag = std::fabs(acc);
        for (int j = 0; j < F; ++j) {
          const double t = G[static_cast<std::size_t>(i) * F + j] * x[static_cast<std::size_t>(j) * D + k];
          acc += t;
          mag += std::fabs(t);
        }
        ref[i * D + k] = acc;
        bound[i * D + k] = 2.0 * (F + 1) * kFp32UnitRoundoff * mag;
      }
  }
}

std::string DotBackwardBench::describe() const {
  char buf[256];
  std::snprintf(buf, sizeof buf, "batch %lld, %s, %d pairs, %.3f GB through HBM at least, %.2f GFLOP",
                static_cast<long long>(workload_.batch), workload_.shape.key().c_str(), workload_.pairs(),
                dot_backward_bytes(workload_) / 1e9, dot_backward_flops(workload_) / 1e9);
  return buf;
}

kernels::DotInteractionShape DotBackwardBench::shape() const {
  kernels::DotInteractionShape s;
  s.batch = workload_.batch;
  s.num_features = workload_.shape.num_features;
  s.dim = workload_.shape.dim;
  s.self = workload_.shape.self;
  return s;
}

ForwardCheck DotBackwardBench::verify(const DotBackwardLaunch& launch) {
  ForwardCheck c;
  gpu::memset_async(dfeatures_.get(), 0xFF, dfeatures_.bytes(), stream_.get());  // NaN everywhere
  launch(shape(), features_[0].as<float>(), feature_width(), dout_[0].as<float>(), dout_width(),
         dfeatures_.as<float>(), feature_width(), stream_.get());
  stream_.synchronize();
  if (host_dfeatures_.empty()) host_dfeatures_ = gpu::PinnedBuffer(dfeatures_.bytes());
  gpu::memcpy_sync(host_dfeatures_.get(), dfeatures_.get(), dfeatures_.bytes(), gpu::CopyKind::device_to_host);
  const float* got = host_dfeatures_.as<float>();
  const int64_t fw = feature_width(), dw = dout_width(), D = workload_.shape.dim;
  int64_t first_bad = -1;
  double max_err = 0.0;
  const int64_t n = static_cast<int64_t>(dfeatures_.bytes() / sizeof(float));
#pragma omp parallel for schedule(static) reduction(max : max_err)
  for (int64_t e = 0; e < n; ++e) {
    const double err = std::fabs(static_cast<double>(got[e]) - reference_[static_cast<std::size_t>(e)]);
    max_err = std::max(max_err, std::isfinite(err) ? err : INFINITY);
    const int64_t s = e / fw, col = e - s * fw;
    // The pass-through samples' x_0 gradient is dout's first D values, bit for bit.
    const bool exact = pass_through_sample(s) && col < D;
    const bool bad = exact ? !(got[e] == host_dout_[static_cast<std::size_t>(s * dw + col)])
                           : !(err <= error_bound_[static_cast<std::size_t>(e)]);
    if (bad) {
#pragma omp critical(hetrec_dot_backward_verify)
      if (first_bad < 0 || e < first_bad) first_bad = e;
    }
  }
  c.max_abs_error = max_err;
  if (first_bad >= 0) {
    const int64_t s = first_bad / fw, col = first_bad - s * fw;
    char buf[256];
    std::snprintf(buf, sizeof buf, "sample %lld feature %lld column %lld: got %.9g, reference %.9g (bound %.3g%s)",
                  static_cast<long long>(s), static_cast<long long>(col / D), static_cast<long long>(col % D),
                  static_cast<double>(got[first_bad]), reference_[static_cast<std::size_t>(first_bad)],
                  error_bound_[static_cast<std::size_t>(first_bad)],
                  pass_through_sample(s) && col < D ? ", pass-through: exact" : "");
    c.reason = std::string("differs from the reference: ") + buf;
    return c;
  }
  c.ok = true;
  return c;
}

double DotBackwardBench::median_us(const DotBackwardLaunch& launch, int reps) {
  return median_launch_us(stream_, reps, [&](int i) {
    const std::size_t r = i < 0 ? features_.size() - 1 : static_cast<std::size_t>(i) % features_.size();
    launch(shape(), features_[r].as<float>(), feature_width(), dout_[r].as<float>(), dout_width(),
           dfeatures_.as<float>(), feature_width(), stream_.get());
  });
}

}  // namespace hetrec::tune
