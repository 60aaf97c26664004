#include "gemm/cpu_blas.h"

#include <cblas.h>

#include <limits>
#include <string>

#include "core/error.h"

namespace hetrec::inline gemm::cpu_blas {
namespace {

CBLAS_TRANSPOSE to_cblas(Op op) { return op == Op::none ? CblasNoTrans : CblasTrans; }

blasint to_blasint(int64_t v, const char* what) {
  if (v < 0 || v > std::numeric_limits<blasint>::max())
    throw InternalError(std::string("cpu_blas::gemm: ") + what + " = " + std::to_string(v) +
                        " is negative or exceeds the BLAS integer range");
  return static_cast<blasint>(v);
}

void check_ld(int64_t ld, int64_t cols, const char* what) {
  // A leading dimension is at least the stored row length, and at least 1 (BLAS rule).
  const int64_t least = cols > 1 ? cols : 1;
  if (ld < least)
    throw InternalError(std::string("cpu_blas::gemm: ") + what + " = " + std::to_string(ld) +
                        ": expected at least " + std::to_string(least) + " (the stored row length, and >= 1)");
}

// k == 0: op(A) op(B) is the zero matrix, so C = beta * C (and C = 0 when beta == 0, to
// keep the promise that C is not read then).
template <class T>
void scale_c(int64_t m, int64_t n, T beta, T* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == T(0) ? T(0) : beta * c[i * ldc + j];
}

void call(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, blasint m, blasint n, blasint k, float alpha, const float* a,
          blasint lda, const float* b, blasint ldb, float beta, float* c, blasint ldc) {
  cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void call(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, blasint m, blasint n, blasint k, double alpha, const double* a,
          blasint lda, const double* b, blasint ldb, double beta, double* c, blasint ldc) {
  cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

}  // namespace

template <class T>
void gemm(Op op_a, Op op_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda, const T* b,
          int64_t ldb, T beta, T* c, int64_t ldc) {
  const blasint bm = to_blasint(m, "m");
  const blasint bn = to_blasint(n, "n");
  const blasint bk = to_blasint(k, "k");
  check_ld(lda, op_a == Op::none ? k : m, "lda");
  check_ld(ldb, op_b == Op::none ? n : k, "ldb");
  check_ld(ldc, n, "ldc");
  if (m == 0 || n == 0) return;
  if (k == 0) {
    scale_c(m, n, beta, c, ldc);
    return;
  }
  call(to_cblas(op_a), to_cblas(op_b), bm, bn, bk, alpha, a, to_blasint(lda, "lda"), b, to_blasint(ldb, "ldb"),
       beta, c, to_blasint(ldc, "ldc"));
}

template void gemm<float>(Op, Op, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*, int64_t,
                          float, float*, int64_t);
template void gemm<double>(Op, Op, int64_t, int64_t, int64_t, double, const double*, int64_t, const double*,
                           int64_t, double, double*, int64_t);

}  // namespace hetrec::gemm::cpu_blas
