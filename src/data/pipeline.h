#pragma once
// Overlaps data production with training: a producer thread fills a bounded queue of
// `prefetch_batches` batches from a BatchSource while the consumer trains on the
// previous ones. Batch buffers circulate between the two (a delivered batch's old
// storage is handed back to the producer), so the steady state allocates nothing.
//
// position() is the consumer's: the samples of the batches next() has delivered, which
// is what a checkpoint must record, however far ahead the producer has read. An
// exception thrown by the source (a malformed line, a corrupt row group) is re-thrown by
// the next() that would have delivered the batch, and by every later next() until seek().
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "data/source.h"

namespace hetrec::inline data {

class Pipeline {
 public:
  // Starts producing at the source's current position. Throws ConfigError when
  // batch_size < 1 or prefetch_batches < 1 (data.prefetch_batches).
  Pipeline(std::unique_ptr<BatchSource> source, int64_t batch_size, int prefetch_batches);
  // Stops the producer (it finishes the batch in progress) and joins it.
  ~Pipeline();
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  // The next batch in source order, swapped into `batch` (whose previous buffers are
  // recycled). False once the source is exhausted.
  bool next(Batch& batch);
  // Samples delivered so far (the resume position).
  int64_t position() const;
  // Discards prefetched batches and restarts production at `sample`.
  void seek(int64_t sample);
  // Counters as of the last delivered batch.
  DataCounters counters() const;
  int64_t batch_size() const { return batch_size_; }
  int64_t size_hint() const { return size_hint_; }
  const std::string& describe() const { return description_; }

 private:
  struct Slot {
    Batch batch;
    DataCounters counters;  // the source's counters right after producing `batch`
  };

  void start();
  void stop();
  void produce();

  std::unique_ptr<BatchSource> source_;
  const int64_t batch_size_;
  const int64_t size_hint_;
  const std::string description_;

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::unique_ptr<Slot>> ready_;  // produced, in order
  std::vector<std::unique_ptr<Slot>> free_;  // buffers waiting to be filled
  bool stopping_ = false;
  bool finished_ = false;           // the producer saw the end of the source
  std::exception_ptr error_;        // the producer's failure, delivered after ready_ drains
  int64_t position_ = 0;
  DataCounters counters_;
  std::thread producer_;
};

}  // namespace hetrec::data::data
