// The CBLAS wrapper against a plain double-precision GEMM.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "../nn/dense_test_support.h"
#include "core/error.h"
#include "gemm/cpu_blas.h"

namespace hetrec {
namespace {

using cpu_blas::Op;
using testing::random_vector;

// C = alpha op(A) op(B) + beta C0 in double, A and B stored with row strides lda / ldb.
template <class T>
std::vector<double> reference_gemm(Op op_a, Op op_b, int64_t m, int64_t n, int64_t k, double alpha,
                                   const std::vector<T>& a, int64_t lda, const std::vector<T>& b, int64_t ldb,
                                   double beta, const std::vector<T>& c0, int64_t ldc) {
  std::vector<double> c(static_cast<std::size_t>(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0.0;
      for (int64_t p = 0; p < k; ++p) {
        const double av = op_a == Op::none ? a[i * lda + p] : a[p * lda + i];
        const double bv = op_b == Op::none ? b[p * ldb + j] : b[j * ldb + p];
        acc += av * bv;
      }
      c[i * n + j] = alpha * acc + (beta == 0.0 ? 0.0 : beta * static_cast<double>(c0[i * ldc + j]));
    }
  return c;
}

template <class T>
void check_case(Op op_a, Op op_b, int64_t m, int64_t n, int64_t k, T alpha, T beta, int64_t pad, double tol) {
  // Stored shapes: op(A) m x k, so A is m x k or k x m; padding widens every row stride.
  const int64_t a_rows = op_a == Op::none ? m : k, a_cols = op_a == Op::none ? k : m;
  const int64_t b_rows = op_b == Op::none ? k : n, b_cols = op_b == Op::none ? n : k;
  const int64_t lda = a_cols + pad, ldb = b_cols + pad, ldc = n + pad;
  const auto a = random_vector<T>(a_rows * lda, 11 + m);
  const auto b = random_vector<T>(b_rows * ldb, 12 + n);
  // beta == 0: C starts as NaN and must not be read.
  auto c = beta == T(0) ? testing::poisoned<T>(m * ldc) : random_vector<T>(m * ldc, 13 + k);
  const auto c0 = c;
  cpu_blas::gemm<T>(op_a, op_b, m, n, k, alpha, a.data(), lda, b.data(), ldb, beta, c.data(), ldc);
  const auto ref = reference_gemm(op_a, op_b, m, n, k, alpha, a, lda, b, ldb, beta, c0, ldc);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      const double want = ref[i * n + j];
      ASSERT_NEAR(c[i * ldc + j], want, tol * (1.0 + std::abs(want)))
          << "op_a " << int(op_a) << " op_b " << int(op_b) << " at (" << i << ", " << j << ")";
    }
    // The padding of C is not ours to write.
    if (beta != T(0)) {
      for (int64_t j = n; j < ldc; ++j) ASSERT_EQ(c[i * ldc + j], c0[i * ldc + j]);
    }
  }
}

TEST(CpuBlas, AllTransposesMatchDoubleReference) {
  for (Op op_a : {Op::none, Op::transpose})
    for (Op op_b : {Op::none, Op::transpose}) {
      check_case<double>(op_a, op_b, 7, 5, 9, 1.0, 0.0, 0, 1e-13);
      check_case<double>(op_a, op_b, 13, 6, 4, -0.5, 0.75, 3, 1e-13);
      check_case<float>(op_a, op_b, 33, 17, 65, 1.0f, 0.0f, 0, 1e-5);
      check_case<float>(op_a, op_b, 8, 40, 3, 2.0f, 1.0f, 2, 1e-5);
    }
}

TEST(CpuBlas, EmptyInnerDimensionScalesC) {
  check_case<double>(Op::none, Op::none, 3, 4, 0, 1.0, 0.5, 1, 0.0);
  check_case<double>(Op::none, Op::transpose, 3, 4, 0, 1.0, 0.0, 1, 0.0);
}

TEST(CpuBlas, RejectsBadLeadingDimension) {
  std::vector<float> a(12, 1.0f), b(12, 1.0f), c(12, 0.0f);
  EXPECT_THROW(cpu_blas::gemm<float>(Op::none, Op::none, 3, 4, 3, 1.0f, a.data(), 2, b.data(), 4, 0.0f, c.data(), 4),
               InternalError);
  EXPECT_THROW(cpu_blas::gemm<float>(Op::none, Op::none, -1, 4, 3, 1.0f, a.data(), 3, b.data(), 4, 0.0f, c.data(), 4),
               InternalError);
}

}  // namespace
}  // namespace hetrec
