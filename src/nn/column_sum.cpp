#include "nn/column_sum.h"

#include <algorithm>

#include "nn/parallel_threshold.h"

namespace hetrec::inline nn {

template <class T>
void column_sum(const T* m, int64_t rows, int64_t cols, T* out) {
  // Threads own disjoint column blocks and walk the rows in order: contiguous reads,
  // no reduction across threads. 64 columns = 4 cache lines of fp32 per row.
  constexpr int64_t kColumnBlock = 64;
  const int64_t blocks = (cols + kColumnBlock - 1) / kColumnBlock;
#pragma omp parallel for schedule(static) if (rows * cols > kParallelMinElements)
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const int64_t j0 = blk * kColumnBlock;
    const int64_t j1 = std::min(cols, j0 + kColumnBlock);
    for (int64_t j = j0; j < j1; ++j) out[j] = T(0);
    for (int64_t i = 0; i < rows; ++i) {
      const T* row = m + i * cols;
      for (int64_t j = j0; j < j1; ++j) out[j] += row[j];
    }
  }
}

template void column_sum<float>(const float*, int64_t, int64_t, float*);
template void column_sum<double>(const double*, int64_t, int64_t, double*);

}  // namespace hetrec::nn::nn
