#pragma once
// DLRM dot interaction. Per sample, the F = num_sparse + 1 feature vectors (the bottom
// MLP output first, then the pooled embedding of every table) are dotted pairwise; the
// output is [dense vector, dots] where the dots run over the pairs (i, j), j < i (j <= i
// with the self terms), i ascending then j ascending: the row-major lower triangle of
// the Gram matrix, the order of the DLRM reference (li, lj) indices.
#include <cstdint>
#include <utility>
#include <vector>

namespace hetrec::inline nn {

template <class T>
class DotInteraction {
 public:
  DotInteraction(int num_sparse, int dim, bool self_interaction);

  int num_features() const { return num_sparse_ + 1; }
  int dim() const { return dim_; }
  int num_pairs() const { return static_cast<int>(pairs_.size()); }
  int output_width() const { return dim_ + num_pairs(); }
  // Feature indices (i, j) of output column dim() + p.
  std::pair<int, int> pair(int p) const { return pairs_.at(static_cast<std::size_t>(p)); }

  // dense: batch x dim; sparse: batch x num_sparse x dim; out: batch x output_width().
  void forward(const T* dense, const T* sparse, int64_t batch, T* out) const;
  // dout: batch x output_width(). Writes (overwrites) ddense: batch x dim and dsparse:
  // batch x num_sparse x dim.
  void backward(const T* dense, const T* sparse, const T* dout, int64_t batch, T* ddense, T* dsparse) const;

 private:
  int num_sparse_;
  int dim_;
  std::vector<std::pair<int, int>> pairs_;
};

extern template class DotInteraction<float>;
extern template class DotInteraction<double>;

}  // namespace hetrec::nn::nn
