#pragma once
// A dense parameter as the layers expose it: a name, its value and its gradient (same
// shape and dtype, sharing storage with the layer that owns them).
#include <string>
#include <vector>

#include "core/tensor.h"

namespace hetrec::inline optim {

struct DenseParam {
  std::string name;  // PyTorch-like, e.g. "bottom_mlp.0.weight"
  Tensor value;
  Tensor grad;
};

}  // namespace hetrec::optim::optim
