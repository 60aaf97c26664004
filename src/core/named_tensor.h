#pragma once
// A named piece of state (a parameter, an embedding table, an optimizer slot). The
// tensor shares storage with its owner: writing into it changes the owner.
#include <string>

#include "core/tensor.h"

namespace hetrec {

struct NamedTensor {
  std::string name;
  Tensor tensor;
};

}  // namespace hetrec
