#include "data/mlperf_multihot.h"

#include <glob.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <exception>
#include <filesystem>
#include <limits>
#include <optional>
#include <set>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"

namespace hetrec::inline data {
namespace {

static_assert(std::endian::native == std::endian::little,
              "the .npy arrays are read as stored: little-endian, as numpy writes them on x86 and ARM");

constexpr const char* kDenseSuffix = "_dense.npy";
constexpr const char* kLabelsSuffix = "_labels.npy";
constexpr const char* kSparseSuffix = "_sparse_multi_hot.npz";
// More days than a numeric range may name (Criteo 1TB has 24): a larger range is a typo.
constexpr int64_t kMaxRangeDays = 100000;

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

// N of a prefix whose file name is "day_N", else nothing.
std::optional<int64_t> day_number(const std::string& prefix) {
  const std::string base = std::filesystem::path(prefix).filename().string();
  if (base.size() <= 4 || base.compare(0, 4, "day_") != 0 || base.size() > 4 + 18) return std::nullopt;
  int64_t n = 0;
  for (std::size_t i = 4; i < base.size(); ++i) {
    if (base[i] < '0' || base[i] > '9') return std::nullopt;
    n = n * 10 + (base[i] - '0');
  }
  return n;
}

// Days by number, then by name (prefixes that are not "day_N" last).
void sort_days(std::vector<std::string>& prefixes) {
  std::sort(prefixes.begin(), prefixes.end(), [](const std::string& a, const std::string& b) {
    const auto na = day_number(a), nb = day_number(b);
    const int64_t ka = na.value_or(std::numeric_limits<int64_t>::max());
    const int64_t kb = nb.value_or(std::numeric_limits<int64_t>::max());
    return ka != kb ? ka < kb : a < b;
  });
}

std::vector<std::string> expand_entry(const std::string& entry, const std::string& key) {
  std::error_code ec;
  if (std::filesystem::is_directory(entry, ec)) {
    std::vector<std::string> out;
    for (const auto& file : std::filesystem::directory_iterator(entry, ec)) {
      const std::string name = file.path().filename().string();
      if (!ends_with(name, kDenseSuffix)) continue;
      const std::string prefix = (file.path().parent_path() / name.substr(0, name.size() - std::strlen(kDenseSuffix))).string();
      if (day_number(prefix)) out.push_back(prefix);
    }
    if (ec) throw IoError(fmt::format("{} = '{}': cannot list the directory: {}", key, entry, ec.message()));
    if (out.empty())
      throw IoError(fmt::format("{}: directory '{}' holds no day files (expected day_<N>{}, day_<N>{}, day_<N>{})",
                                key, entry, kDenseSuffix, kLabelsSuffix, kSparseSuffix));
    sort_days(out);
    return out;
  }
  if (entry.find_first_of("*?[") != std::string::npos) {
    const std::string pattern = entry + kDenseSuffix;
    glob_t g{};
    const int rc = ::glob(pattern.c_str(), 0, nullptr, &g);
    std::vector<std::string> out;
    if (rc == 0)
      for (std::size_t i = 0; i < g.gl_pathc; ++i) {
        const std::string path = g.gl_pathv[i];
        out.push_back(path.substr(0, path.size() - std::strlen(kDenseSuffix)));
      }
    ::globfree(&g);
    if (out.empty()) throw IoError(fmt::format("{}: no day files match '{}'", key, pattern));
    sort_days(out);
    return out;
  }
  for (const char* suffix : {kDenseSuffix, kLabelsSuffix, kSparseSuffix})
    if (ends_with(entry, suffix)) return {entry.substr(0, entry.size() - std::strlen(suffix))};
  return {entry};
}

std::string table_label(const FeatureSpec& model, int t) {
  return fmt::format("table {}, model.tables[{}] '{}'", t, t, model.tables[static_cast<std::size_t>(t)].name);
}

bool is_label_type(NpyType t) {
  return t == NpyType::b1 || t == NpyType::i1 || t == NpyType::u1 || t == NpyType::i4 || t == NpyType::i8 ||
         t == NpyType::f4 || t == NpyType::f8;
}

template <class T>
T load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Label i of a raw label array as a double (exact for every accepted type's 0 and 1).
double label_value(const char* raw, NpyType type, std::size_t i) {
  switch (type) {
    case NpyType::b1:
    case NpyType::u1: return static_cast<unsigned char>(raw[i]);
    case NpyType::i1: return static_cast<signed char>(raw[i]);
    case NpyType::i4: return load<int32_t>(raw + 4 * i);
    case NpyType::i8: return static_cast<double>(load<int64_t>(raw + 8 * i));
    case NpyType::f4: return load<float>(raw + 4 * i);
    default: return load<double>(raw + 8 * i);
  }
}

}  // namespace

MlperfDayFiles mlperf_day_files(const std::string& prefix) {
  return MlperfDayFiles{prefix, prefix + kDenseSuffix, prefix + kLabelsSuffix, prefix + kSparseSuffix};
}

std::vector<std::string> expand_mlperf_days(const std::string& spec, const std::string& key) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    const std::size_t comma = spec.find(',', start);
    const std::string entry = trim(spec.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (entry.empty())
      throw ConfigError(fmt::format("{} = '{}': empty entry in the comma-separated list of days", key, spec));
    const std::size_t open = entry.find('{');
    if (open == std::string::npos) {
      for (std::string& p : expand_entry(entry, key)) out.push_back(std::move(p));
    } else {
      // One numeric range "{A..B}".
      const std::size_t dots = entry.find("..", open), close = entry.find('}', open);
      auto number = [&](std::size_t b, std::size_t e) -> int64_t {
        if (b >= e || e - b > 9) return -1;
        int64_t v = 0;
        for (std::size_t i = b; i < e; ++i) {
          if (entry[i] < '0' || entry[i] > '9') return -1;
          v = v * 10 + (entry[i] - '0');
        }
        return v;
      };
      const int64_t a = dots == std::string::npos || close == std::string::npos || dots > close ? -1
                                                                                              : number(open + 1, dots);
      const int64_t b = a < 0 ? -1 : number(dots + 2, close);
      if (a < 0 || b < a || b - a >= kMaxRangeDays || entry.find('{', close) != std::string::npos)
        throw ConfigError(fmt::format("{} = '{}': '{}' is not a day range: expected one {{A..B}} with 0 <= A <= B, "
                                      "e.g. day_{{0..22}}",
                                      key, spec, entry));
      for (int64_t n = a; n <= b; ++n) {
        const std::string day = entry.substr(0, open) + std::to_string(n) + entry.substr(close + 1);
        for (std::string& p : expand_entry(day, key)) out.push_back(std::move(p));
      }
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  std::set<std::string> seen;
  for (const std::string& p : out)
    if (!seen.insert(p).second) throw ConfigError(fmt::format("{} = '{}': day '{}' is named twice", key, spec, p));
  return out;
}

struct MlperfMultihotSource::OpenDay {
  NpyArray dense, labels;
  std::unique_ptr<NpzArchive> archive;  // before `tables`, which read through it
  std::vector<NpyArray> tables;
  int64_t samples = 0;
  int deflated = 0;
};

MlperfMultihotSource::MlperfMultihotSource(const std::string& spec, const FeatureSpec& model, const std::string& what,
                                           int threads)
    : model_(model), what_(what), threads_(std::max(threads, 1)) {
  if (model_.num_tables() < 1) throw ConfigError("the MLPerf multi-hot reader needs a model with at least one table");
  for (int t = 0; t < model_.num_tables(); ++t)
    if (model_.tables[static_cast<std::size_t>(t)].rows > std::numeric_limits<int32_t>::max())
      throw ConfigError(fmt::format("model.tables[{}] has {} rows: the batch layout's int32 ids address at most {}", t,
                                    model_.tables[static_cast<std::size_t>(t)].rows,
                                    std::numeric_limits<int32_t>::max()));
  for (const std::string& prefix : expand_mlperf_days(spec, what.empty() ? "path" : what)) {
    DayInfo info;
    info.files = mlperf_day_files(prefix);
    days_.push_back(std::move(info));
  }
  for (std::size_t d = 0; d < days_.size(); ++d) {
    const std::unique_ptr<OpenDay> day = open_day(d);
    days_[d].samples = day->samples;
    days_[d].first = total_;
    total_ += day->samples;
    deflated_members_ += day->deflated;
    stored_members_ += static_cast<int>(day->tables.size()) - day->deflated;
  }
  const auto tables = static_cast<std::size_t>(model_.num_tables());
  ids_raw_.resize(tables);
  ids_.resize(tables);
  lengths_.resize(tables);
  assembler_.set_threads(threads_);
}

MlperfMultihotSource::~MlperfMultihotSource() = default;

std::unique_ptr<MlperfMultihotSource::OpenDay> MlperfMultihotSource::open_day(std::size_t d) const {
  const MlperfDayFiles& f = days_[d].files;
  NpyArray dense = NpyArray::open_file(f.dense, what_);
  const NpyHeader& dh = dense.header();
  if (dh.type != NpyType::f4 || dh.shape.size() != 2 || dh.shape[1] != model_.num_dense)
    throw DataError(fmt::format("{}: dense features of type '{}' and shape ({}): expected float32 ('<f4') of shape "
                                "(samples, {}) (model.num_dense)",
                                dense.name(), dh.descr, fmt::join(dh.shape, ", "), model_.num_dense));
  const int64_t n = dh.shape[0];
  NpyArray labels = NpyArray::open_file(f.labels, what_);
  const NpyHeader& lh = labels.header();
  if (!is_label_type(lh.type) || lh.shape.empty() || lh.shape.size() > 2 || (lh.shape.size() == 2 && lh.shape[1] != 1))
    throw DataError(fmt::format("{}: labels of type '{}' and shape ({}): expected shape (samples,) or (samples, 1) of "
                                "int32, int64, int8, uint8, bool, float32 or float64",
                                labels.name(), lh.descr, fmt::join(lh.shape, ", ")));
  if (lh.shape[0] != n)
    throw DataError(fmt::format("{}: {} samples, {} holds {}: the files of a day must hold the same samples",
                                labels.name(), lh.shape[0], dense.name(), n));

  auto archive = std::make_unique<NpzArchive>(f.sparse, what_);
  const int tables = model_.num_tables();
  for (const NpzMember& m : archive->members()) {
    bool known = false;
    for (int t = 0; t < tables && !known; ++t) known = m.name == std::to_string(t) + ".npy";
    if (!known)
      throw DataError(fmt::format("{}: unexpected member '{}': expected only 0.npy .. {}.npy, one per table of the "
                                  "model (model.tables)",
                                  f.sparse, m.name, tables - 1));
  }
  std::vector<NpyArray> arrays;
  int deflated = 0;
  for (int t = 0; t < tables; ++t) {
    const TableConfig& table = model_.tables[static_cast<std::size_t>(t)];
    const std::string member = std::to_string(t) + ".npy";
    const NpzMember* m = archive->find(member);
    if (m == nullptr)
      throw DataError(fmt::format("{}: no member '{}' ({}): expected one member per table, 0.npy .. {}.npy", f.sparse,
                                  member, table_label(model_, t), tables - 1));
    NpyArray a = NpyArray::open_member(*archive, *m);
    const NpyHeader& h = a.header();
    if ((h.type != NpyType::i4 && h.type != NpyType::i8) || h.shape.size() != 2)
      throw DataError(fmt::format("{} ({}): ids of type '{}' and shape ({}): expected int32 ('<i4') or int64 ('<i8') "
                                  "of shape (samples, hotness)",
                                  a.name(), table_label(model_, t), h.descr, fmt::join(h.shape, ", ")));
    // A table with variable bags takes bags of 1 to 2 * hotness - 1 ids (data/feature_spec.h).
    if (table.variable_bags ? h.shape[1] < 1 || h.shape[1] > 2 * int64_t{table.hotness} - 1
                            : h.shape[1] != table.hotness)
      throw DataError(fmt::format("{} ({}): {} ids per sample, the model's table has hotness {}{}", a.name(),
                                  table_label(model_, t), h.shape[1], table.hotness,
                                  table.variable_bags ? fmt::format(" (variable bags: 1 to {} ids)", 2 * table.hotness - 1)
                                                      : std::string(" (model.table_hotness)")));
    if (h.shape[0] != n)
      throw DataError(fmt::format("{}: {} samples, {} holds {}: the files of a day must hold the same samples",
                                  a.name(), h.shape[0], dense.name(), n));
    if (a.deflated()) ++deflated;
    arrays.push_back(std::move(a));
  }
  return std::unique_ptr<OpenDay>(
      new OpenDay{std::move(dense), std::move(labels), std::move(archive), std::move(arrays), n, deflated});
}

void MlperfMultihotSource::read_rows(int64_t row, int64_t n) {
  OpenDay& day = *open_;
  const int nd = model_.num_dense;
  const auto un = static_cast<std::size_t>(n);

  dense_.resize(un * static_cast<std::size_t>(nd));
  day.dense.read_rows(row, n, dense_.data());
  for (std::size_t i = 0; i < dense_.size(); ++i)
    if (!std::isfinite(dense_[i]))
      throw DataError(fmt::format("{}: sample {}: dense feature {} is {}: expected a finite value", day.dense.name(),
                                  row + static_cast<int64_t>(i) / nd, static_cast<int64_t>(i) % nd, dense_[i]));

  const NpyHeader& lh = day.labels.header();
  label_raw_.resize(un * static_cast<std::size_t>(day.labels.row_bytes()));
  day.labels.read_rows(row, n, label_raw_.data());
  labels_.resize(un);
  for (std::size_t i = 0; i < un; ++i) {
    const double y = label_value(label_raw_.data(), lh.type, i);
    if (y != 0.0 && y != 1.0)
      throw DataError(fmt::format("{}: sample {}: label {}: expected 0 or 1", day.labels.name(),
                                  row + static_cast<int64_t>(i), y));
    labels_[i] = static_cast<float>(y);
  }

  const int tables = model_.num_tables();
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(tables));
#pragma omp parallel for num_threads(threads_) schedule(dynamic, 1)
  for (int t = 0; t < tables; ++t) {
    const auto st = static_cast<std::size_t>(t);
    try {
      NpyArray& a = day.tables[st];
      const int64_t hot = a.header().shape[1];
      const auto count = un * static_cast<std::size_t>(hot);
      std::vector<int32_t>& ids = ids_[st];
      ids.resize(count);
      lengths_[st].assign(un, static_cast<int32_t>(hot));
      const int64_t rows = model_.tables[st].rows;
      auto bad = [&](std::size_t k, int64_t id) {
        return DataError(fmt::format("{}: sample {}, table {}: id {} outside [0, {}) (model.tables[{}] '{}'.rows)",
                                     a.name(), row + static_cast<int64_t>(k) / hot, t, id, rows, t,
                                     model_.tables[st].name));
      };
      if (a.header().type == NpyType::i4) {
        a.read_rows(row, n, ids.data());
        for (std::size_t k = 0; k < count; ++k)
          if (ids[k] < 0 || ids[k] >= rows) throw bad(k, ids[k]);
      } else {
        std::vector<char>& raw = ids_raw_[st];
        raw.resize(count * sizeof(int64_t));
        a.read_rows(row, n, raw.data());
        for (std::size_t k = 0; k < count; ++k) {
          const auto id = load<int64_t>(raw.data() + k * sizeof(int64_t));
          if (id < 0 || id >= rows) throw bad(k, id);
          ids[k] = static_cast<int32_t>(id);
        }
      }
    } catch (...) {
      errors[st] = std::current_exception();
    }
  }
  for (const std::exception_ptr& e : errors)  // the first table's error, whatever the thread timing
    if (e) std::rethrow_exception(e);

  assembler_.add_samples(n, labels_.data(), dense_.data());
  assembler_.add_table_bags(n, [&](int t) {
    const auto st = static_cast<std::size_t>(t);
    return BatchAssembler::Bags{lengths_[st].data(), ids_[st].data(), static_cast<int64_t>(ids_[st].size())};
  });
}

bool MlperfMultihotSource::next(Batch& batch, int64_t batch_size) {
  if (batch_size < 1) throw ConfigError(fmt::format("batch size {}: expected >= 1", batch_size));
  const int64_t first = position_;
  assembler_.begin(model_.num_dense, model_.num_tables());
  try {
    while (assembler_.size() < batch_size && position_ < total_) {
      // The last day starting at or before the position (empty days start where the next one does).
      const auto it = std::upper_bound(days_.begin(), days_.end(), position_,
                                       [](int64_t p, const DayInfo& d) { return p < d.first; });
      const auto d = static_cast<std::size_t>(it - days_.begin()) - 1;
      if (!open_ || current_ != d) {
        open_.reset();
        open_ = open_day(d);
        current_ = d;
        if (open_->samples != days_[d].samples)
          throw DataError(fmt::format("{}: holds {} samples, {} when the dataset was opened (the file changed)",
                                      open_->dense.name(), open_->samples, days_[d].samples));
      }
      const int64_t row = position_ - days_[d].first;
      const int64_t n = std::min(days_[d].samples - row, batch_size - assembler_.size());
      read_rows(row, n);
      position_ += n;
    }
  } catch (...) {
    position_ = first;  // nothing of this batch was delivered
    throw;
  }
  if (assembler_.size() == 0) return false;
  assembler_.finish(batch, first);
  return true;
}

void MlperfMultihotSource::seek(int64_t sample) {
  if (sample < 0 || sample > total_)
    throw DataError(fmt::format("{}: cannot seek to sample {}: expected 0 to {}", describe(), sample, total_));
  position_ = sample;
}

std::string MlperfMultihotSource::describe() const {
  return fmt::format("MLPerf multi-hot {} ({} day{}{}; {} samples; {} dense, {} tables; npz members: {} stored, {} "
                     "deflated)",
                     days_.front().files.prefix, days_.size(), days_.size() == 1 ? "" : "s",
                     days_.size() == 1 ? "" : " to " + days_.back().files.prefix, total_, model_.num_dense,
                     model_.num_tables(), stored_members_, deflated_members_);
}

}  // namespace hetrec::data::data
