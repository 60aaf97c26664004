#include "tunable/cross_net/cross_net_bench.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "core/error.h"
#include "core/rng.h"
#include "gpu/memory.h"
#include "kernels/column_sum.h"
#include "tunable/cross_net/cross_net_variant.h"
#include "tune/gpu/median_launch_time.h"

namespace hetrec::tune {

namespace {
// Unit roundoffs (2^-p for p significand bits): fp32 24, bf16 8, fp16 11.
constexpr double kFp32UnitRoundoff = 0x1.0p-24;
constexpr double kBf16UnitRoundoff = 0x1.0p-8;
constexpr double kF16UnitRoundoff = 0x1.0p-11;
// fp16's absolute rounding error below its smallest normal: half its subnormal spacing
// 2^-24 (bf16 and fp32 share fp32's exponent range; the test values never get that small).
constexpr double kF16SubnormalHalfSpacing = 0x1.0p-25;
// Each fp32 rounding may err by u of its result; the bounds take twice the first-order
// sum (as tunable/dot_interaction/dot_interaction_bench.cpp does), covering the u^2 terms.
constexpr double kBoundMargin = 2.0;
// All bits set: a NaN in fp32, bf16 and fp16 alike.
constexpr int kPoisonByte = 0xFF;
// Room for one failing element's or column's description.
constexpr std::size_t kReasonChars = 320;

double op_unit_roundoff(DType t) {
  return t == DType::bf16 ? kBf16UnitRoundoff : t == DType::f16 ? kF16UnitRoundoff : 0.0;
}
double op_absolute_error(DType t) { return t == DType::f16 ? kF16SubnormalHalfSpacing : 0.0; }

uint16_t round_op(float v, DType t) { return t == DType::bf16 ? f32_to_bf16(v) : f32_to_f16(v); }

// A batch x width matrix of uniform values in [-1, 1] of `type`, drawn per row.
HostCrossMatrix draw(DType type, int64_t rows, int width, uint64_t seed, uint64_t stream) {
  HostCrossMatrix m;
  m.type = type;
  const std::size_t n = static_cast<std::size_t>(rows) * static_cast<std::size_t>(width);
  if (type == DType::f32) m.f32.resize(n);
  else m.bits.resize(n);
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    Rng rng(seed, stream * static_cast<uint64_t>(rows) + static_cast<uint64_t>(r));
    const std::size_t base = static_cast<std::size_t>(r) * static_cast<std::size_t>(width);
    for (int c = 0; c < width; ++c) {
      const float v = static_cast<float>(2.0 * rng.uniform() - 1.0);
      if (type == DType::f32) m.f32[base + static_cast<std::size_t>(c)] = v;
      else m.bits[base + static_cast<std::size_t>(c)] = round_op(v, type);
    }
  }
  return m;
}

gpu::DeviceBuffer upload(const HostCrossMatrix& m) {
  gpu::DeviceBuffer b(m.bytes());
  gpu::memcpy_sync(b.get(), m.data(), m.bytes(), gpu::CopyKind::host_to_device);
  return b;
}

// Copies `b` into page-locked `host` (allocated on first use: pageable copies of the
// gigabytes the checks read back would take several times longer).
template <class T>
const T* download(const gpu::DeviceBuffer& b, gpu::PinnedBuffer& host) {
  if (host.bytes() != b.bytes()) host = gpu::PinnedBuffer(b.bytes());
  gpu::memcpy_sync(host.get(), b.get(), b.bytes(), gpu::CopyKind::device_to_host);
  return host.as<T>();
}

float op_value(uint16_t bits, DType t) { return t == DType::bf16 ? bf16_to_f32(bits) : f16_to_f32(bits); }

// The lowest failing element index and its description, across threads.
struct FirstBad {
  int64_t index = -1;
  std::string what;
  void offer(int64_t i, const std::string& w) {
#pragma omp critical(hetrec_cross_verify)
    if (index < 0 || i < index) {
      index = i;
      what = w;
    }
  }
};

std::string describe_element(const char* output, int64_t e, int width, double got, double ref, double bound) {
  char buf[kReasonChars];
  std::snprintf(buf, sizeof buf, "%s row %lld column %lld: got %.9g, reference %.9g (bound %.3g)", output,
                static_cast<long long>(e / width), static_cast<long long>(e % width), got, ref, bound);
  return buf;
}

std::string describe_workload(const char* pass, const CrossWorkload& w, double bytes) {
  char buf[kReasonChars];
  std::snprintf(buf, sizeof buf, "%s: batch %lld x width %d, %s operands, %.3f GB through HBM at least", pass,
                static_cast<long long>(w.batch), w.shape.width, std::string(dtype_name(w.shape.op_type)).c_str(),
                bytes / 1e9);
  return buf;
}

CrossWorkload make_workload(const kernels::CrossNetShape& shape, int64_t batch) {
  if (shape.width < 1 || batch < 1 || !kernels::cross_op_supported(shape.op_type))
    throw ConfigError("tune: the cross net workload needs a width, a batch and an fp32, bf16 or fp16 operand type");
  return {shape, batch};
}
}  // namespace

float HostCrossMatrix::at(std::size_t i) const { return type == DType::f32 ? f32[i] : op_value(bits[i], type); }

// ---- forward ----

CrossForwardBench::CrossForwardBench(const kernels::CrossNetShape& shape, int64_t batch, uint64_t seed)
    : workload_(make_workload(shape, batch)) {
  x0_ = draw(DType::f32, batch, shape.width, seed, 0);
  x_ = draw(DType::f32, batch, shape.width, seed, 1);
  z_ = draw(shape.op_type, batch, shape.width, seed, 2);
  d_x0_ = upload(x0_);
  d_x_ = upload(x_);
  d_z_ = upload(z_);
  const auto n = static_cast<std::size_t>(workload_.elements());
  d_out_ = gpu::DeviceBuffer(n * sizeof(float));
  if (shape.op_type != DType::f32) d_out_op_ = gpu::DeviceBuffer(n * dtype_size(shape.op_type));
}

std::string CrossForwardBench::describe() const {
  return describe_workload("cross forward", workload_, cross_forward_bytes(workload_));
}

void CrossForwardBench::run(const CrossForwardLaunch& launch) {
  launch({workload_.batch, workload_.shape.width}, d_x0_.as<float>(), d_x_.as<float>(), d_z_.get(),
         d_out_.as<float>(), d_out_op_.empty() ? nullptr : d_out_op_.get(), workload_.shape.op_type, stream_.get());
}

ForwardCheck CrossForwardBench::verify(const CrossForwardLaunch& launch) {
  gpu::memset_async(d_out_.get(), kPoisonByte, d_out_.bytes(), stream_.get());
  if (!d_out_op_.empty()) gpu::memset_async(d_out_op_.get(), kPoisonByte, d_out_op_.bytes(), stream_.get());
  run(launch);
  stream_.synchronize();
  const float* out = download<float>(d_out_, host_out_);
  const uint16_t* out_op = d_out_op_.empty() ? nullptr : download<uint16_t>(d_out_op_, host_out_op_);
  const DType op = workload_.shape.op_type;
  const int width = workload_.shape.width;
  const int64_t n = workload_.elements();
  FirstBad bad;
  double max_err = 0.0;
#pragma omp parallel for schedule(static) reduction(max : max_err)
  for (int64_t e = 0; e < n; ++e) {
    const auto i = static_cast<std::size_t>(e);
    const float ref = std::fma(x0_.f32[i], z_.at(i), x_.f32[i]);
    const double err = std::fabs(static_cast<double>(out[i]) - ref);
    max_err = std::max(max_err, std::isfinite(err) ? err : INFINITY);
    if (std::memcmp(&out[i], &ref, sizeof ref) != 0) {
      bad.offer(e, describe_element("out", e, width, out[i], ref, 0.0));
    } else if (out_op && out_op[i] != round_op(ref, op)) {
      bad.offer(e, describe_element("out_op", e, width, op_value(out_op[i], op), ref, 0.0));
    }
  }
  ForwardCheck c;
  c.max_abs_error = max_err;
  if (bad.index >= 0) {
    c.reason = "differs from the reference: " + bad.what;
    return c;
  }
  c.ok = true;
  return c;
}

double CrossForwardBench::median_us(const CrossForwardLaunch& launch, int reps) {
  return median_launch_us(stream_, reps, [&](int) { run(launch); });
}

// ---- backward ----

namespace {
// Rows the passes other than the timed one are checked on at full size: several chunks of
// every variant (256 to 1024 rows) and a partial one.
constexpr int64_t kOtherPassRows = 4 * 1024 + 3;
}  // namespace

std::vector<kernels::CrossBackwardPass> CrossBackwardBench::checked_passes() {
  // Every kind of pass: the five of a five-layer net (no terms, one, two, a checkpoint
  // with three terms and four z's, a bottom pass that accumulates with the z's offset)
  // and the tuned one (the bottom pass of three layers).
  std::vector<kernels::CrossBackwardPass> passes = kernels::cross_backward_schedule(5);
  passes.push_back(cross_backward_tuned_pass());
  return passes;
}

CrossBackwardBench::CrossBackwardBench(const kernels::CrossNetShape& shape, int64_t batch, uint64_t seed)
    : workload_(make_workload(shape, batch)) {
  g_ = draw(DType::f32, batch, shape.width, seed, 0);
  x0_ = draw(DType::f32, batch, shape.width, seed, 2);
  acc_ = draw(DType::f32, batch, shape.width, seed, 4);
  for (int s = 0; s < kernels::kMaxCrossTerms; ++s) h_.push_back(draw(shape.op_type, batch, shape.width, seed, 10 + s));
  for (int j = 0; j <= kernels::kMaxCrossTerms; ++j) z_.push_back(draw(shape.op_type, batch, shape.width, seed, 20 + j));
  d_g0_ = upload(g_);
  d_acc0_ = upload(acc_);
  d_g_ = upload(g_);
  d_acc_ = upload(acc_);
  for (const HostCrossMatrix& h : h_) d_h_.push_back(upload(h));
  d_x0_ = upload(x0_);
  for (const HostCrossMatrix& z : z_) d_z_.push_back(upload(z));
  const auto n = static_cast<std::size_t>(workload_.elements());
  d_dz_ = gpu::DeviceBuffer(n * dtype_size(shape.op_type));
  d_dx0_ = gpu::DeviceBuffer(n * sizeof(float));
  d_bias_ = gpu::DeviceBuffer(static_cast<std::size_t>(shape.width) * sizeof(float));
  d_workspace_ = gpu::DeviceBuffer(kernels::column_sum_workspace_bytes(batch, shape.width));
}

std::string CrossBackwardBench::describe() const {
  return describe_workload("cross backward (the bottom pass of three layers)", workload_,
                           cross_backward_bytes(workload_));
}

kernels::CrossBackward CrossBackwardBench::args(const kernels::CrossBackwardPass& p) const {
  kernels::CrossBackward a;
  a.g = d_g_.as<float>();
  a.terms = static_cast<int>(p.terms.size());
  for (int s = 0; s < a.terms; ++s) a.h[s] = d_h_[static_cast<std::size_t>(s)].get();
  a.x0 = d_x0_.as<float>();
  a.direct_terms = static_cast<int>(p.direct.size());
  for (int j = 0; j < a.direct_terms; ++j) a.z[j] = d_z_[static_cast<std::size_t>(j)].get();
  a.direct_first = p.direct_first;
  a.acc = d_acc_.as<float>();
  a.accumulate = p.accumulate;
  a.checkpoint = p.checkpoint;
  a.dx0 = p.bottom ? d_dx0_.as<float>() : nullptr;
  a.dz = d_dz_.get();
  a.op_type = workload_.shape.op_type;
  a.bias_grad = d_bias_.as<float>();
  return a;
}

ForwardCheck CrossBackwardBench::check(const kernels::CrossBackwardPass& p, int64_t rows) {
  const float* g = download<float>(d_g_, host_g_);
  const float* acc = download<float>(d_acc_, host_acc_);
  const float* dx0 = p.bottom ? download<float>(d_dx0_, host_dx0_) : nullptr;
  const float* bias = download<float>(d_bias_, host_bias_);
  const DType op = workload_.shape.op_type;
  const float* dz32 = op == DType::f32 ? download<float>(d_dz_, host_dz_) : nullptr;
  const uint16_t* dz16 = op == DType::f32 ? nullptr : download<uint16_t>(d_dz_, host_dz_);
  const int width = workload_.shape.width;
  const double u = kFp32UnitRoundoff, u_op = op_unit_roundoff(op), abs_op = op_absolute_error(op);
  const int terms = static_cast<int>(p.terms.size()), directs = static_cast<int>(p.direct.size());
  // Roundings on each output's path: one per term added to G, one per product-and-sum of
  // the direct part, one for dz's product and one for dx0's sum.
  const int roundings_g = terms, roundings_d = terms + 1, roundings_direct = terms + directs,
            roundings_dx0 = terms + directs + 1;
  const bool writes_direct = p.checkpoint && (p.accumulate || directs > 0);
  FirstBad bad;
  double max_err = 0.0;
  std::vector<double> col_sum(static_cast<std::size_t>(width), 0.0), col_mag(col_sum.size(), 0.0);
  const auto check_value = [&](const char* name, int64_t e, double got, double ref, double bound, double& worst) {
    const double err = std::fabs(got - ref);
    worst = std::max(worst, std::isfinite(err) ? err : INFINITY);
    if (!(err <= bound)) bad.offer(e, describe_element(name, e, width, got, ref, bound));
  };
  const auto check_same = [&](const char* name, int64_t e, float got, float before, double& worst) {
    if (std::memcmp(&got, &before, sizeof got) != 0) {
      worst = INFINITY;
      bad.offer(e, std::string(name) + " written although this pass must leave it: " +
                       describe_element(name, e, width, got, before, 0.0));
    }
  };
#pragma omp parallel reduction(max : max_err)
  {
    std::vector<double> sum(col_sum.size(), 0.0), mag(col_sum.size(), 0.0);
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r)
      for (int c = 0; c < width; ++c) {
        const int64_t e = r * width + c;
        const auto i = static_cast<std::size_t>(e);
        double G = g_.f32[i], mag_g = std::fabs(G);
        double direct = p.accumulate ? acc_.f32[i] : 0.0, mag_direct = std::fabs(direct);
        for (int st = 0; st <= terms; ++st) {
          const int j = st - p.direct_first;
          if (j >= 0 && j < directs) {
            const double zv = z_[static_cast<std::size_t>(j)].at(i);
            direct += G * zv;
            mag_direct += mag_g * std::fabs(zv);
          }
          if (st < terms) {
            const double hv = h_[static_cast<std::size_t>(st)].at(i);
            G += hv;
            mag_g += std::fabs(hv);
          }
        }
        const double xv = x0_.f32[i];
        const double d = G * xv, mag_d = mag_g * std::fabs(xv);
        const double dz_got = op == DType::f32 ? dz32[i] : op_value(dz16[i], op);
        check_value("dz", e, dz_got, d, kBoundMargin * (roundings_d * u + u_op) * mag_d + abs_op, max_err);
        if (p.checkpoint) {
          check_value("g", e, g[i], G, kBoundMargin * roundings_g * u * mag_g, max_err);
          if (writes_direct)
            check_value("acc", e, acc[i], direct, kBoundMargin * roundings_direct * u * mag_direct, max_err);
        } else {
          check_same("g", e, g[i], g_.f32[i], max_err);
          check_same("acc", e, acc[i], acc_.f32[i], max_err);
        }
        if (p.bottom)
          check_value("dx0", e, dx0[i], direct + G, kBoundMargin * roundings_dx0 * u * (mag_direct + mag_g), max_err);
        sum[static_cast<std::size_t>(c)] += d;
        mag[static_cast<std::size_t>(c)] += mag_d;
      }
#pragma omp critical(hetrec_cross_column_sums)
    for (std::size_t c = 0; c < col_sum.size(); ++c) {
      col_sum[c] += sum[c];
      col_mag[c] += mag[c];
    }
  }
  // Bias gradient: the per-element error of dz's fp32 value plus the summation's, over
  // the longest chain any variant adds in series.
  const double chain = static_cast<double>(kernels::cross_backward_sum_chain(rows));
  int64_t bad_column = -1;
  for (int c = 0; c < width && bad_column < 0; ++c) {
    const auto i = static_cast<std::size_t>(c);
    const double bound = kBoundMargin * (chain + 1 + roundings_d) * u * col_mag[i];
    const double err = std::fabs(static_cast<double>(bias[i]) - col_sum[i]);
    max_err = std::max(max_err, std::isfinite(err) ? err : INFINITY);
    if (!(err <= bound)) {
      bad_column = c;
      char buf[kReasonChars];
      std::snprintf(buf, sizeof buf, "bias gradient column %d: got %.9g, reference %.9g (bound %.3g)", c,
                    static_cast<double>(bias[i]), col_sum[i], bound);
      if (bad.index < 0) bad.what = buf;
    }
  }
  ForwardCheck out;
  out.max_abs_error = max_err;
  if (bad.index >= 0 || bad_column >= 0) {
    char what[kReasonChars];
    std::snprintf(what, sizeof what, "%d terms, %d z's from G^(%d)%s%s%s", terms, directs, p.direct_first,
                  p.accumulate ? ", accumulating" : "", p.checkpoint ? ", checkpoint" : "",
                  p.bottom ? ", bottom" : "");
    out.reason = std::string("differs from the reference (pass of ") + what + "): " + bad.what;
    return out;
  }
  out.ok = true;
  return out;
}

ForwardCheck CrossBackwardBench::verify(const CrossBackwardLaunch& launch) {
  ForwardCheck all;
  all.ok = true;
  const kernels::CrossBackwardPass timed = cross_backward_tuned_pass();
  for (const kernels::CrossBackwardPass& p : checked_passes()) {
    // The timed pass over every row; the other kinds over the first rows only (their
    // branches run the same geometry), which keeps the host's check short at full size.
    const int64_t rows = p == timed ? workload_.batch : std::min(workload_.batch, kOtherPassRows);
    gpu::memcpy_async(d_g_.get(), d_g0_.get(), d_g_.bytes(), gpu::CopyKind::device_to_device, stream_.get());
    gpu::memcpy_async(d_acc_.get(), d_acc0_.get(), d_acc_.bytes(), gpu::CopyKind::device_to_device, stream_.get());
    gpu::memset_async(d_dz_.get(), kPoisonByte, d_dz_.bytes(), stream_.get());
    gpu::memset_async(d_dx0_.get(), kPoisonByte, d_dx0_.bytes(), stream_.get());
    gpu::memset_async(d_bias_.get(), kPoisonByte, d_bias_.bytes(), stream_.get());
    launch({rows, workload_.shape.width}, args(p), d_workspace_.get(), d_workspace_.bytes(), stream_.get());
    stream_.synchronize();
    const ForwardCheck c = check(p, rows);
    all.max_abs_error = std::max(all.max_abs_error, c.max_abs_error);
    if (!c.ok) {
      all.ok = false;
      all.reason = c.reason;
      return all;
    }
  }
  return all;
}

double CrossBackwardBench::median_us(const CrossBackwardLaunch& launch, int reps) {
  const kernels::CrossBackward a = args(cross_backward_tuned_pass());
  return median_launch_us(stream_, reps, [&](int) {
    launch({workload_.batch, workload_.shape.width}, a, d_workspace_.get(), d_workspace_.bytes(), stream_.get());
  });
}

}  // namespace hetrec::tune
