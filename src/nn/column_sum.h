#pragma once
// Sum over the rows of a row-major rows x cols matrix (the bias gradient of a batch).
#include <cstdint>

namespace hetrec::inline nn {

// out[j] = sum_i m[i * cols + j], summed in row order for every column, so the result
// does not depend on the number of threads.
template <class T>
void column_sum(const T* m, int64_t rows, int64_t cols, T* out);

extern template void column_sum<float>(const float*, int64_t, int64_t, float*);
extern template void column_sum<double>(const double*, int64_t, int64_t, double*);

}  // namespace hetrec::nn::nn
