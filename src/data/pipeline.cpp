#include "data/pipeline.h"

#include <utility>

#include <fmt/format.h>

#include "core/error.h"

namespace hetrec::inline data {

Pipeline::Pipeline(std::unique_ptr<BatchSource> source, int64_t batch_size, int prefetch_batches)
    : source_(std::move(source)),
      batch_size_(batch_size),
      size_hint_(source_ ? source_->size_hint() : -1),
      description_(source_ ? source_->describe() : std::string()) {
  HETREC_CHECK(source_ != nullptr, "a pipeline needs a source");
  if (batch_size < 1) throw ConfigError(fmt::format("batch size {}: expected >= 1", batch_size));
  if (prefetch_batches < 1)
    throw ConfigError(fmt::format("data.prefetch_batches = {}: expected >= 1", prefetch_batches));
  for (int k = 0; k < prefetch_batches; ++k) free_.push_back(std::make_unique<Slot>());
  position_ = source_->position();
  counters_ = source_->counters();
  start();
}

Pipeline::~Pipeline() { stop(); }

void Pipeline::start() {
  stopping_ = false;
  finished_ = false;
  error_ = nullptr;
  producer_ = std::thread([this] { produce(); });
}

void Pipeline::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (producer_.joinable()) producer_.join();
}

void Pipeline::produce() {
  for (;;) {
    std::unique_ptr<Slot> slot;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait(lock, [this] { return stopping_ || !free_.empty(); });
      if (stopping_) return;
      slot = std::move(free_.back());
      free_.pop_back();
    }
    // The source is only touched here, outside the lock, while the producer runs.
    bool produced = false;
    std::exception_ptr error;
    try {
      produced = source_->next(slot->batch, batch_size_);
      slot->counters = source_->counters();
    } catch (...) {
      error = std::current_exception();
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (produced) {
        ready_.push_back(std::move(slot));
      } else {
        free_.push_back(std::move(slot));
        if (error) error_ = error;
        else finished_ = true;
      }
    }
    changed_.notify_all();
    if (!produced) return;  // end of data or failure: nothing more to produce until seek()
  }
}

bool Pipeline::next(Batch& batch) {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [this] { return !ready_.empty() || finished_ || error_; });
  if (ready_.empty()) {
    if (error_) std::rethrow_exception(error_);
    return false;
  }
  std::unique_ptr<Slot> slot = std::move(ready_.front());
  ready_.pop_front();
  std::swap(batch, slot->batch);  // the caller's old buffers go back to the producer
  position_ = batch.first_sample + batch.size;
  counters_ = slot->counters;
  free_.push_back(std::move(slot));
  lock.unlock();
  changed_.notify_all();
  return true;
}

int64_t Pipeline::position() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return position_;
}

DataCounters Pipeline::counters() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return counters_;
}

void Pipeline::seek(int64_t sample) {
  stop();
  // The producer is gone: the source and the queues are ours alone.
  while (!ready_.empty()) {
    free_.push_back(std::move(ready_.front()));
    ready_.pop_front();
  }
  try {
    source_->seek(sample);
  } catch (...) {
    // No producer runs now; next() reports the failure until a seek() succeeds.
    error_ = std::current_exception();
    throw;
  }
  position_ = source_->position();
  counters_ = source_->counters();
  start();
}

}  // namespace hetrec::data::data
