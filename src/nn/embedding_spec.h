#pragma once
// What an embedding collection holds: its tables (rows, bag shape, pooling), the row
// width and the row storage type. ModelConfig::embedding_spec() derives it.
#include <vector>

#include "core/dtype.h"
#include "data/feature_spec.h"

namespace hetrec::inline nn {

struct EmbeddingSpec {
  std::vector<TableConfig> tables;
  int dim = 0;
  DType row_dtype = DType::f32;
};

}  // namespace hetrec::nn::nn
