#pragma once
// Reads a hetrec binary columnar file (see data/binary_format.h). Seeking is O(1): the
// trailer indexes the row groups and every group but the last is full. One decoded
// group is held in memory at a time.
//
// Every group's checksum is verified before any of its samples is delivered (read_group).
// Opened for a model (training, evaluation), the source also checks every group's
// checksum ahead of the reader, on a thread of its own, from the first group to the last:
// a damaged group late in the file stops the run as soon as that pass reaches it, not when
// the epoch does.
#include <cstdint>
#include <memory>
#include <string>

#include "data/batch_assembler.h"
#include "data/binary_format.h"
#include "data/source.h"
#include "data/feature_spec.h"

namespace hetrec::inline data {

class RowGroupChecker;

class BinarySource final : public BatchSource {
 public:
  // Opens and validates `path` (see BinaryFile); `what` names its origin in errors
  // (e.g. "data.train_path"). `threads` (data.reader_threads) read, check and assemble
  // the tables of a batch in parallel.
  explicit BinarySource(std::string path, const std::string& what = "", int threads = 1);
  // Also checks the file fits the model: same numbers of dense features and tables,
  // and no table of the file larger than the model's (DataError otherwise). With
  // `check_ahead`, starts the pass over every group's checksum: next() then throws the
  // first failure it found (the DataError of BinaryFile::check_group, or an IoError) as
  // soon as it is known, before delivering any further sample.
  BinarySource(std::string path, const FeatureSpec& model, const std::string& what = "", int threads = 1,
               bool check_ahead = true);
  ~BinarySource() override;

  bool next(Batch& batch, int64_t batch_size) override;
  int64_t position() const override { return position_; }
  void seek(int64_t sample) override;
  int64_t size_hint() const override { return file_.samples(); }
  DataCounters counters() const override { return DataCounters{position_, 0}; }
  std::string describe() const override;

  const BinaryHeader& header() const { return file_.header(); }

 private:
  BinaryFile file_;
  int threads_ = 1;
  int64_t position_ = 0;
  RowGroup group_;
  BatchAssembler assembler_;
  std::unique_ptr<RowGroupChecker> checker_;  // last: stopped before the file it reads is closed
};

}  // namespace hetrec::data::data
