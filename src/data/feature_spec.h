#pragma once
// The input features a dataset provides and a model consumes: dense features and one
// sparse feature (embedding table) per entry of `tables`. The data layer needs only this;
// ModelConfig (model/model_config.h) extends it with the network's shape.
#include <cstdint>
#include <string>
#include <vector>

namespace hetrec::inline data {

enum class Pooling { sum, mean };

struct TableConfig {
  std::string name;
  int64_t rows = 0;
  int hotness = 1;             // ids per bag (the mean when bags are variable-length)
  bool variable_bags = false;  // bag sizes drawn in [1, 2*hotness-1] instead of fixed
  Pooling pooling = Pooling::sum;
};

struct FeatureSpec {
  int num_dense = 13;
  std::vector<TableConfig> tables;

  int num_tables() const { return static_cast<int>(tables.size()); }
};

}  // namespace hetrec::data::data
