#pragma once
// Mean binary cross-entropy with logits (torch.nn.BCEWithLogitsLoss, reduction "mean").
#include <cstdint>

namespace hetrec::inline nn {

// Returns mean_i [max(x_i, 0) - x_i y_i + log1p(exp(-|x_i|))], the numerically stable
// form of -[y log s(x) + (1 - y) log(1 - s(x))], accumulated in double in fixed-size
// chunks (the same sum for any thread count). Writes d(mean loss)/dx_i = (s(x_i) - y_i)
// / n into grad unless null. n must be positive.
template <class T>
double bce_with_logits(const T* logits, const T* labels, int64_t n, T* grad);

extern template double bce_with_logits<float>(const float*, const float*, int64_t, float*);
extern template double bce_with_logits<double>(const double*, const double*, int64_t, double*);

}  // namespace hetrec::nn::nn
