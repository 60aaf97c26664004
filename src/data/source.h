#pragma once
// A source of batches: synthetic, Criteo TSV or binary columnar. Sources are read
// sequentially; position()/seek() let the trainer resume exactly where it stopped.
#include <cstdint>
#include <string>

#include "data/batch.h"

namespace hetrec::inline data {

struct DataCounters {
  int64_t samples = 0;        // samples delivered
  int64_t skipped_lines = 0;  // malformed records skipped under on_error = "skip"
};

class BatchSource {
 public:
  virtual ~BatchSource() = default;
  // Fills `batch` with up to `batch_size` samples. Returns false when the source is
  // exhausted and no sample was produced (a final partial batch returns true).
  virtual bool next(Batch& batch, int64_t batch_size) = 0;
  // Samples consumed so far (the resume position).
  virtual int64_t position() const = 0;
  // Repositions so that the next sample delivered is number `sample` (0-based).
  virtual void seek(int64_t sample) = 0;
  // Total samples when known in advance, else -1 (a TSV file being streamed).
  virtual int64_t size_hint() const = 0;
  virtual DataCounters counters() const = 0;
  virtual std::string describe() const = 0;
};

}  // namespace hetrec::data::data
