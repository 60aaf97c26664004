#pragma once
// The DType tag of the scalar types the dense layers are instantiated for: float for
// training, double for the gradient checks.
#include <type_traits>

#include "core/dtype.h"

namespace hetrec::inline nn {

template <class T>
constexpr DType scalar_dtype() {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>, "dense layers take float or double");
  return std::is_same_v<T, float> ? DType::f32 : DType::f64;
}

}  // namespace hetrec::nn::nn
