#pragma once
// The preprocessed Criteo 1TB multi-hot dataset of the MLPerf DLRM-DCNv2 benchmark, as
// TorchRec's scripts write it (materialize_synthetic_multihot_dataset.py; read by its
// MultiHotCriteoIterDataPipe). Each day N is three files sharing the prefix "day_N":
//
//   day_N_dense.npy             float32 [samples, num_dense], already log(x + 1)
//   day_N_labels.npy            [samples] or [samples, 1], int32 (or another integer,
//                               bool or float type) with values 0 and 1
//   day_N_sparse_multi_hot.npz  one member "t.npy" per table t = 0 .. T-1: int32 or
//                               int64 [samples, hotness_t], ids already in [0, rows_t)
//
// Many days are one dataset, in the order given, seekable by sample (a position is a day
// and a row in it). Rows are read in place with positioned reads; members written with
// numpy.savez_compressed (deflate) are inflated as streams (see data/npy_array.h).
// Only the days' headers are read up front; the files of one day are open at a time.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/batch_assembler.h"
#include "data/feature_spec.h"
#include "data/npy_array.h"
#include "data/npz_archive.h"
#include "data/source.h"

namespace hetrec::inline data {

// The file names of one day, from its prefix ".../day_N".
struct MlperfDayFiles {
  std::string prefix, dense, labels, sparse;
};
MlperfDayFiles mlperf_day_files(const std::string& prefix);

// The days a path names, in order. `spec` is a comma-separated list of entries, each:
//   - a directory: every day_<N>_dense.npy in it, by increasing N;
//   - a prefix ".../day_N" (or the name of one of its three files);
//   - a glob pattern of prefixes (".../day_*", ".../day_1[0-9]"): the matches of
//     pattern + "_dense.npy", by increasing day number;
//   - a prefix with one numeric range "{A..B}" (".../day_{0..22}"): days A to B in order.
// ConfigError naming `key` for an empty entry, a malformed range or a day named twice;
// IoError when a directory or pattern matches no day.
std::vector<std::string> expand_mlperf_days(const std::string& spec, const std::string& key);

class MlperfMultihotSource final : public BatchSource {
 public:
  // Opens every day of `spec` (see expand_mlperf_days) and checks it against the model:
  // dense [n, model.num_dense] float32; labels [n] or [n, 1]; members "0.npy" ..
  // "<T-1>.npy" only, each [n, hotness] int32 or int64 with hotness = the model table's
  // (1 to 2 * hotness - 1 for a table with variable_bags); the same n in the three files.
  // ConfigError for a model table of more rows than int32 ids address.
  // DataError naming the file (and member) otherwise; IoError when a file cannot be
  // opened. `what` names the config key in errors; `threads` read the tables of a batch
  // in parallel.
  MlperfMultihotSource(const std::string& spec, const FeatureSpec& model, const std::string& what = "",
                       int threads = 1);
  ~MlperfMultihotSource() override;

  // Values are checked as they are read: a label other than 0 or 1, a dense value that
  // is not finite, an id outside [0, model rows) is a DataError naming the file, the
  // sample (its row in the day's files) and, for an id, the table.
  bool next(Batch& batch, int64_t batch_size) override;
  int64_t position() const override { return position_; }
  void seek(int64_t sample) override;
  int64_t size_hint() const override { return total_; }
  DataCounters counters() const override { return DataCounters{position_, 0}; }
  std::string describe() const override;

  int days() const { return static_cast<int>(days_.size()); }

 private:
  struct OpenDay;
  struct DayInfo {
    MlperfDayFiles files;
    int64_t samples = 0;
    int64_t first = 0;  // index of its first sample in the dataset
  };
  // Opens and checks the three files of day d.
  std::unique_ptr<OpenDay> open_day(std::size_t d) const;
  // Appends rows [row, row + n) of the current day to the assembler.
  void read_rows(int64_t row, int64_t n);

  FeatureSpec model_;
  std::string what_;
  int threads_ = 1;
  std::vector<DayInfo> days_;
  int64_t total_ = 0;
  int64_t position_ = 0;
  int deflated_members_ = 0, stored_members_ = 0;
  std::size_t current_ = 0;
  std::unique_ptr<OpenDay> open_;
  // Per batch chunk: raw labels and ids as stored, converted into these.
  std::vector<char> label_raw_;
  std::vector<float> labels_, dense_;
  std::vector<std::vector<char>> ids_raw_;
  std::vector<std::vector<int32_t>> ids_, lengths_;
  BatchAssembler assembler_;
};

}  // namespace hetrec::data::data
