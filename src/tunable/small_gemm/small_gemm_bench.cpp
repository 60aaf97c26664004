#include "tunable/small_gemm/small_gemm_bench.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "core/dtype.h"
#include "core/error.h"
#include "core/rng.h"
#include "gpu/memory.h"
#include "tune/gpu/median_launch_time.h"

namespace hetrec::tune {

namespace {
// fp32 unit roundoff (2^-24): a sum of n products accumulated in fp32, in any order, is
// within (n - 1) u sum|a_k b_k| of the exact value to first order (Higham, 2nd ed., 3.1).
constexpr double kFp32UnitRoundoff = 0x1.0p-24;

using kernels::SmallGemmKind;

// Random values in [-1, 1] rounded to `t`, written as `t` into `bits`, kept as floats.
std::vector<float> random_matrix(std::size_t count, DType t, uint64_t seed, uint64_t stream,
                                 std::vector<uint8_t>& bits) {
  std::vector<float> values(count);
  bits.assign(count * dtype_size(t), 0);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < static_cast<int64_t>(count); ++i) {
    Rng rng(seed, stream * 0x100000000ull + static_cast<uint64_t>(i));
    const float x = static_cast<float>(2.0 * rng.uniform() - 1.0);
    store_from_f32(bits.data(), static_cast<std::size_t>(i), t, x);
    values[static_cast<std::size_t>(i)] = load_as_f32(bits.data(), static_cast<std::size_t>(i), t);
  }
  return values;
}

gpu::DeviceBuffer upload(const std::vector<uint8_t>& bits) {
  gpu::DeviceBuffer d(std::max<std::size_t>(bits.size(), 1));
  gpu::memcpy_sync(d.get(), bits.data(), bits.size(), gpu::CopyKind::host_to_device);
  return d;
}
}  // namespace

SmallGemmBench::Strides SmallGemmBench::strides() const {
  const kernels::SmallGemmShape& s = workload_.shape;
  const int64_t m = workload_.m;
  const auto ld = [this](int64_t width) { return (width + ld_multiple_ - 1) / ld_multiple_ * ld_multiple_; };
  switch (s.kind) {
    case SmallGemmKind::rows: return {ld(s.wide), ld(s.flag ? s.wide : s.narrow), ld(s.narrow), m, s.narrow};
    case SmallGemmKind::outer: return {ld(s.narrow), ld(s.flag ? s.narrow : s.wide), ld(s.wide), m, s.wide};
    case SmallGemmKind::reduce:
      return {ld(s.narrow), ld(s.wide), ld(s.flag ? s.wide : s.narrow), s.flag ? s.narrow : s.wide,
              s.flag ? s.wide : s.narrow};
  }
  return {};
}

SmallGemmBench::SmallGemmBench(const kernels::SmallGemmShape& shape, int64_t m, uint64_t seed, int rotations,
                               int ld_multiple)
    : ld_multiple_(ld_multiple) {
  if (m < 1 || rotations < 1 || ld_multiple < 1) throw ConfigError("tune: the small GEMM workload needs a batch and rotations");
  if (shape.narrow < 1 || shape.narrow > kernels::kSmallGemmMaxNarrow || shape.wide < 1)
    throw ConfigError("tune: small GEMM shape " + shape.key() + " is out of range");
  workload_.shape = shape;
  workload_.m = m;
  const Strides st = strides();
  const DType t = shape.operand;
  // A (rows, outer) or X (reduce): m rows of lda; B: the small matrix (rows, outer) or Y
  // (reduce): m rows of ldb.
  const std::size_t a_count = static_cast<std::size_t>(m) * st.lda;
  // B of rows and outer: N x K (B^T) or K x N, rows of ldb.
  const int64_t b_rows = shape.kind == SmallGemmKind::reduce ? m
                         : shape.flag ? (shape.kind == SmallGemmKind::rows ? shape.narrow : shape.wide)
                                      : (shape.kind == SmallGemmKind::rows ? shape.wide : shape.narrow);
  const std::size_t b_count = static_cast<std::size_t>(b_rows) * st.ldb;
  std::vector<float> a0, b0;
  for (int r = 0; r < rotations; ++r) {
    std::vector<uint8_t> bits;
    std::vector<float> a = random_matrix(a_count, t, seed, 2 * static_cast<uint64_t>(r), bits);
    a_.push_back(upload(bits));
    std::vector<float> b = random_matrix(b_count, t, seed, 2 * static_cast<uint64_t>(r) + 1, bits);
    b_.push_back(upload(bits));
    if (r == 0) {
      a0 = std::move(a);
      b0 = std::move(b);
    }
  }
  const int bias_count = shape.kind == SmallGemmKind::rows ? shape.narrow : shape.wide;
  std::vector<uint8_t> bias_bits;
  const std::vector<float> bias = random_matrix(static_cast<std::size_t>(bias_count), DType::f32, seed,
                                                2 * static_cast<uint64_t>(rotations), bias_bits);
  bias_ = upload(bias_bits);
  c_ = gpu::DeviceBuffer(static_cast<std::size_t>(st.c_rows * st.ldc) * sizeof(float));

  // The reference, in double, with its bound.
  reference_.assign(static_cast<std::size_t>(st.c_rows * st.c_cols), 0.0);
  error_bound_.assign(reference_.size(), 0.0);
  const bool epilogue = shape.epilogue != kernels::SmallGemmEpilogue::none;
  const bool relu = shape.epilogue == kernels::SmallGemmEpilogue::relu_bias;
  const auto finish = [&](std::size_t idx, double acc, double mag, int64_t n, float bias_value) {
    if (epilogue) {
      acc += bias_value;
      mag += std::fabs(bias_value);
    }
    // ReLU is 1-Lipschitz, so the bound carries through it.
    reference_[idx] = relu ? std::max(acc, 0.0) : acc;
    error_bound_[idx] = 2.0 * static_cast<double>(n + 2) * kFp32UnitRoundoff * mag;
  };
  if (shape.kind == SmallGemmKind::reduce) {
    const int64_t narrow = shape.narrow, wide = shape.wide;
#pragma omp parallel for schedule(dynamic)
    for (int64_t e = 0; e < narrow * wide; ++e) {
      const int64_t i = e / wide, j = e % wide;
      double acc = 0.0, mag = 0.0;
      for (int64_t r = 0; r < m; ++r) {
        const double v = static_cast<double>(a0[static_cast<std::size_t>(r * st.lda + i)]) *
                         b0[static_cast<std::size_t>(r * st.ldb + j)];
        acc += v;
        mag += std::fabs(v);
      }
      finish(static_cast<std::size_t>(shape.flag ? i * st.c_cols + j : j * st.c_cols + i), acc, mag, m, 0.0f);
    }
  } else {
    const bool rows = shape.kind == SmallGemmKind::rows;
    const int64_t n_out = rows ? shape.narrow : shape.wide;
    const int64_t k = rows ? shape.wide : shape.narrow;
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < m; ++r)
      for (int64_t j = 0; j < n_out; ++j) {
        double acc = 0.0, mag = 0.0;
        for (int64_t kk = 0; kk < k; ++kk) {
          const float bv = b0[static_cast<std::size_t>(shape.flag ? j * st.ldb + kk : kk * st.ldb + j)];
          const double v = static_cast<double>(a0[static_cast<std::size_t>(r * st.lda + kk)]) * bv;
          acc += v;
          mag += std::fabs(v);
        }
        finish(static_cast<std::size_t>(r * st.c_cols + j), acc, mag, k, bias[static_cast<std::size_t>(j)]);
      }
  }
}

std::string SmallGemmBench::describe() const {
  char buf[256];
  std::snprintf(buf, sizeof buf, "m %lld, %s, %.3f GB through HBM at least, %.3f GFLOP (%.2f FLOP/byte)",
                static_cast<long long>(workload_.m), workload_.shape.key().c_str(), small_gemm_bytes(workload_) / 1e9,
                small_gemm_flops(workload_) / 1e9, small_gemm_intensity(workload_));
  return buf;
}

kernels::SmallGemmArgs SmallGemmBench::args(int rotation, std::size_t workspace_floats) {
  if (workspace_floats * sizeof(float) > workspace_.bytes())
    workspace_ = gpu::DeviceBuffer(workspace_floats * sizeof(float));
  const Strides st = strides();
  const std::size_t r = static_cast<std::size_t>(rotation) % a_.size();
  kernels::SmallGemmArgs g;
  g.m = workload_.m;
  g.a = a_[r].get();
  g.lda = st.lda;
  g.b = b_[r].get();
  g.ldb = st.ldb;
  g.c = c_.as<float>();
  g.ldc = st.ldc;
  g.bias = bias_.as<float>();
  g.workspace = workspace_floats ? workspace_.as<float>() : nullptr;
  return g;
}

ForwardCheck SmallGemmBench::verify(const SmallGemmLaunch& launch, std::size_t workspace_floats) {
  ForwardCheck c;
  const kernels::SmallGemmArgs g = args(0, workspace_floats);
  gpu::memset_async(c_.get(), 0xFF, c_.bytes(), stream_.get());  // NaN everywhere
  launch(g, stream_.get());
  stream_.synchronize();
  if (host_c_.empty()) host_c_ = gpu::PinnedBuffer(c_.bytes());
  gpu::memcpy_sync(host_c_.get(), c_.get(), c_.bytes(), gpu::CopyKind::device_to_host);
  const float* got = host_c_.as<float>();
  const Strides st = strides();
  int64_t first_bad = -1, first_touched = -1;
  double max_err = 0.0;
  const int64_t n = st.c_rows * st.ldc;
#pragma omp parallel for schedule(static) reduction(max : max_err)
  for (int64_t i = 0; i < n; ++i) {
    const int64_t row = i / st.ldc, col = i % st.ldc;
    if (col >= st.c_cols) {
      uint32_t bits;
      std::memcpy(&bits, &got[i], sizeof bits);
      if (bits != 0xFFFFFFFFu) {
#pragma omp critical(hetrec_small_gemm_verify)
        if (first_touched < 0 || i < first_touched) first_touched = i;
      }
      continue;
    }
    const std::size_t ref = static_cast<std::size_t>(row * st.c_cols + col);
    const double err = std::fabs(static_cast<double>(got[i]) - reference_[ref]);
    max_err = std::max(max_err, std::isfinite(err) ? err : INFINITY);
    if (!(err <= error_bound_[ref])) {
#pragma omp critical(hetrec_small_gemm_verify)
      if (first_bad < 0 || i < first_bad) first_bad = i;
    }
  }
  c.max_abs_error = max_err;
  if (first_touched >= 0) {
    c.reason = "wrote C's row padding at row " + std::to_string(first_touched / st.ldc) + " column " +
               std::to_string(first_touched % st.ldc);
    return c;
  }
  if (first_bad >= 0) {
    const int64_t row = first_bad / st.ldc, col = first_bad % st.ldc;
    const std::size_t ref = static_cast<std::size_t>(row * st.c_cols + col);
    char buf[256];
    std::snprintf(buf, sizeof buf, "C[%lld][%lld]: got %.9g, reference %.9g (bound %.3g)",
                  static_cast<long long>(row), static_cast<long long>(col), static_cast<double>(got[first_bad]),
                  reference_[ref], error_bound_[ref]);
    c.reason = std::string("differs from the reference: ") + buf;
    return c;
  }
  c.ok = true;
  return c;
}

double SmallGemmBench::median_us(const SmallGemmLaunch& launch, int reps, std::size_t workspace_floats) {
  (void)args(0, workspace_floats);  // grow the workspace outside the timed launches
  return median_launch_us(stream_, reps, [&](int i) {
    launch(args(i < 0 ? static_cast<int>(a_.size()) - 1 : i, workspace_floats), stream_.get());
  });
}

cublaslt::Problem SmallGemmBench::cublas_problem() const {
  const kernels::SmallGemmShape& s = workload_.shape;
  const Strides st = strides();
  cublaslt::Problem p;
  p.d_type = DType::f32;
  p.precision = s.operand == DType::f32    ? cublaslt::Precision::fp32
                : s.operand == DType::bf16 ? cublaslt::Precision::bf16
                                           : cublaslt::Precision::fp16;
  switch (s.kind) {
    case SmallGemmKind::rows:
    case SmallGemmKind::outer:
      p.m = workload_.m;
      p.n = s.kind == SmallGemmKind::rows ? s.narrow : s.wide;
      p.k = s.kind == SmallGemmKind::rows ? s.wide : s.narrow;
      p.trans_b = s.flag;
      p.lda = st.lda;
      p.ldb = st.ldb;
      p.ldd = st.ldc;
      p.epilogue = s.epilogue == kernels::SmallGemmEpilogue::none   ? cublaslt::Epilogue::none
                   : s.epilogue == kernels::SmallGemmEpilogue::bias ? cublaslt::Epilogue::bias
                                                                   : cublaslt::Epilogue::relu_bias;
      break;
    case SmallGemmKind::reduce:
      // C = X^T Y (narrow x wide) or Y^T X (wide x narrow): A used transposed, k = the batch.
      p.trans_a = true;
      p.m = s.flag ? s.narrow : s.wide;
      p.n = s.flag ? s.wide : s.narrow;
      p.k = workload_.m;
      p.lda = s.flag ? st.lda : st.ldb;
      p.ldb = s.flag ? st.ldb : st.lda;
      p.ldd = st.ldc;
      break;
  }
  return p;
}

cublaslt::Operands SmallGemmBench::cublas_operands(const kernels::SmallGemmArgs& g) const {
  cublaslt::Operands o;
  const bool swap = workload_.shape.kind == SmallGemmKind::reduce && !workload_.shape.flag;
  o.a = swap ? g.b : g.a;
  o.b = swap ? g.a : g.b;
  o.d = g.c;
  o.bias = workload_.shape.epilogue == kernels::SmallGemmEpilogue::none ? nullptr : g.bias;
  return o;
}

}  // namespace hetrec::tune
