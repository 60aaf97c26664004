#pragma once
// Typed wrapper over the CBLAS interface of OpenBLAS: every GEMM of the CPU engine goes
// through here. Matrices are row-major, as everywhere in hetrec.
#include <cstdint>

namespace hetrec::inline gemm::cpu_blas {

enum class Op : bool { none, transpose };

// C (m x n) = alpha * op(A) * op(B) + beta * C, with op(A) m x k and op(B) k x n.
// lda/ldb/ldc are the row strides (in elements) of A, B and C as stored. With beta == 0
// the prior contents of C are never read (NaN in C does not propagate). Throws
// InternalError when a dimension is negative, a leading dimension is too small, or a
// size does not fit the BLAS integer type.
template <class T>
void gemm(Op op_a, Op op_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda, const T* b,
          int64_t ldb, T beta, T* c, int64_t ldc);

extern template void gemm<float>(Op, Op, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*,
                                 int64_t, float, float*, int64_t);
extern template void gemm<double>(Op, Op, int64_t, int64_t, int64_t, double, const double*, int64_t,
                                  const double*, int64_t, double, double*, int64_t);

}  // namespace hetrec::gemm::cpu_blas
