#pragma once
// Builds a table-major Batch from samples that arrive one at a time (a parsed TSV line,
// a record of a binary row group): bags are staged per table, then concatenated. The
// staging buffers keep their capacity, so a reused assembler does not allocate.
#include <cstdint>
#include <functional>
#include <vector>

#include "data/batch.h"
#include "data/chunked_work.h"

namespace hetrec::inline data {

class BatchAssembler {
 public:
  // Starts an empty batch of samples with `num_dense` dense features and `num_tables` bags.
  void begin(int num_dense, int num_tables);
  int64_t size() const { return static_cast<int64_t>(labels_.size()); }

  // Appends one sample: its label and dense features; then call add_bag for every table
  // in order 0 .. num_tables-1.
  void add_sample(float label, const float* dense);
  void add_bag(int table, const int32_t* ids, int64_t count);
  // Bulk form: appends n samples (labels[n], dense n x num_dense row-major); then call
  // add_bags for every table with their n bag lengths and the ids of those bags.
  void add_samples(int64_t n, const float* labels, const float* dense);
  void add_bags(int table, const int32_t* lengths, int64_t n, const int32_t* ids, int64_t count);
  // add_bags for every table at once, the tables copied in parallel (set_threads):
  // bags_of(t) gives table t's n bag lengths and their `count` ids.
  struct Bags {
    const int32_t* lengths;
    const int32_t* ids;
    int64_t count;
  };
  void add_table_bags(int64_t n, const std::function<Bags(int)>& bags_of);

  // Threads that copy tables in add_table_bags and finish (default 1).
  void set_threads(int threads) { threads_ = threads < 1 ? 1 : threads; }

  // Copies the staged samples into `out` (first_sample recorded as given), reusing its
  // storage: a batch of the same shape is written without clearing it first. Throws
  // DataError when the batch holds more than 2^31-1 ids (the offsets are int32).
  void finish(Batch& out, int64_t first_sample);

 private:
  int num_dense_ = 0;
  int num_tables_ = 0;
  int threads_ = 1;
  std::vector<float> labels_;
  std::vector<float> dense_;
  std::vector<std::vector<int32_t>> lengths_;  // per table, one per sample
  std::vector<StagingVector<int32_t>> ids_;     // per table, bags back to back
};

}  // namespace hetrec::data::data
