#include "data/binary_source.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"

namespace hetrec::inline data {

// Checks every row group's frame and checksum (BinaryFile::check_group) in file order on
// a thread of its own and keeps the first failure. One group piece (4 MiB) in memory.
class RowGroupChecker {
 public:
  explicit RowGroupChecker(const BinaryFile& file) : file_(file), thread_([this] { run(); }) {}
  ~RowGroupChecker() {
    stop_ = true;
    thread_.join();
  }
  RowGroupChecker(const RowGroupChecker&) = delete;
  RowGroupChecker& operator=(const RowGroupChecker&) = delete;

  // Throws the first failure found so far, if any.
  void rethrow_failure() const {
    std::lock_guard<std::mutex> lock(mutex_);
    if (failure_) std::rethrow_exception(failure_);
  }

 private:
  void run() {
    std::vector<char> scratch;
    std::exception_ptr failure;
    try {
      for (int64_t g = 0; g < file_.groups() && !stop_; ++g) file_.check_group(g, scratch);
    } catch (const DataError& e) {
      failure = std::make_exception_ptr(
          DataError(std::string(e.what()) + " (found by the checksum pass that runs ahead of the reader)"));
    } catch (...) {
      failure = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(mutex_);
    failure_ = failure;
  }

  const BinaryFile& file_;
  std::atomic<bool> stop_{false};
  mutable std::mutex mutex_;
  std::exception_ptr failure_;
  std::thread thread_;  // last: starts once the members above exist
};

BinarySource::BinarySource(std::string path, const std::string& what, int threads)
    : file_(std::move(path), what), threads_(std::max(threads, 1)) {
  assembler_.set_threads(threads_);
}

BinarySource::~BinarySource() = default;

BinarySource::BinarySource(std::string path, const FeatureSpec& model, const std::string& what, int threads,
                           bool check_ahead)
    : BinarySource(std::move(path), what, threads) {
  const BinaryHeader& h = file_.header();
  if (h.num_dense != model.num_dense || h.num_tables() != model.num_tables())
    throw DataError(fmt::format("{}: holds {} dense features and {} tables, the model (model.num_dense, "
                                "model.tables) expects {} and {}",
                                file_.path(), h.num_dense, h.num_tables(), model.num_dense, model.num_tables()));
  for (int t = 0; t < h.num_tables(); ++t) {
    const TableConfig& table = model.tables[static_cast<std::size_t>(t)];
    if (h.rows[static_cast<std::size_t>(t)] > table.rows)
      throw DataError(fmt::format("{}: table {} holds ids up to {} rows, more than model.tables[{}] ({}).rows = {}",
                                  file_.path(), t, h.rows[static_cast<std::size_t>(t)], t, table.name, table.rows));
  }
  if (check_ahead) checker_ = std::make_unique<RowGroupChecker>(file_);
}

bool BinarySource::next(Batch& batch, int64_t batch_size) {
  if (batch_size < 1) throw ConfigError(fmt::format("batch size {}: expected >= 1", batch_size));
  if (checker_) checker_->rethrow_failure();
  const BinaryHeader& h = file_.header();
  const int64_t first = position_;
  assembler_.begin(h.num_dense, h.num_tables());
  while (assembler_.size() < batch_size && position_ < file_.samples()) {
    const int64_t g = position_ / h.group_samples;
    if (group_.index != g) {
      group_.index = -1;  // a failed read leaves no half-decoded group behind
      try {
        file_.read_group(g, group_, threads_);
      } catch (...) {
        position_ = first;  // nothing of this batch was delivered
        throw;
      }
    }
    // The samples [position_, end) are contiguous in every column of the group.
    const int64_t end = std::min(group_.first_sample + group_.size, position_ + batch_size - assembler_.size());
    const auto i0 = static_cast<std::size_t>(position_ - group_.first_sample);
    const auto i1 = static_cast<std::size_t>(end - group_.first_sample);
    const auto count = static_cast<int64_t>(i1 - i0);
    assembler_.add_samples(count, group_.labels.data() + i0, group_.dense.data() + i0 * static_cast<std::size_t>(h.num_dense));
    assembler_.add_table_bags(count, [&](int t) {
      const auto st = static_cast<std::size_t>(t);
      const auto& begin = group_.bag_begin[st];
      return BatchAssembler::Bags{group_.lengths[st].data() + i0, group_.ids[st].data() + begin[i0],
                                  begin[i1] - begin[i0]};
    });
    position_ = end;
  }
  if (assembler_.size() == 0) return false;
  assembler_.finish(batch, first);
  return true;
}

void BinarySource::seek(int64_t sample) {
  if (sample < 0 || sample > file_.samples())
    throw DataError(fmt::format("{}: cannot seek to sample {}: expected 0 to {}", file_.path(), sample,
                                file_.samples()));
  position_ = sample;
}

std::string BinarySource::describe() const {
  const BinaryHeader& h = file_.header();
  return fmt::format("binary columnar {} ({} samples in {} row groups; {} dense, {} tables, {} ids)", file_.path(),
                     file_.samples(), file_.groups(), h.num_dense, h.num_tables(), id_mapping_name(h.mapping));
}

}  // namespace hetrec::data::data
