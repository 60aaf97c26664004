// The MLPerf DLRM-DCNv2 multi-hot reader: .npy headers parsed strictly, .npz archives
// with stored, deflated and ZIP64 members, many days read as one dataset with seeking,
// conversion to the binary format bit-identical to a file written from the arrays, and
// every malformed input a DataError naming its file.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "core/error.h"
#include "data/binary_format.h"
#include "data/binary_source.h"
#include "data/mlperf_convert.h"
#include "data/mlperf_multihot.h"
#include "data/npy_format.h"
#include "data_test_util.h"
#include "npy_test_files.h"

namespace hetrec {
namespace {

using testing::FlatSample;
using testing::TempDir;
namespace npy = testing::npy;

constexpr int kTables = 26;
constexpr int kDense = 13;

std::vector<int64_t> table_rows() {
  std::vector<int64_t> rows;
  for (int t = 0; t < kTables; ++t) rows.push_back(20 + 7 * t);
  return rows;
}

FeatureSpec mlperf_spec() {
  FeatureSpec spec;
  spec.num_dense = kDense;
  const auto rows = table_rows();
  for (int t = 0; t < kTables; ++t)
    spec.tables.push_back(TableConfig{"cat_" + std::to_string(t), rows[static_cast<std::size_t>(t)],
                                      npy::kMlperfHotness[static_cast<std::size_t>(t)], false, Pooling::sum});
  return spec;
}

// The samples of `days` in order, as the reader must deliver them.
std::vector<FlatSample> expected_samples(const std::vector<npy::Day>& days) {
  std::vector<FlatSample> out;
  int64_t index = 0;
  for (const npy::Day& d : days)
    for (int64_t i = 0; i < d.samples; ++i) {
      FlatSample s;
      s.index = index++;
      s.label = static_cast<float>(d.labels[static_cast<std::size_t>(i)]);
      s.dense.assign(d.dense.begin() + i * d.num_dense, d.dense.begin() + (i + 1) * d.num_dense);
      for (std::size_t t = 0; t < d.ids.size(); ++t) {
        const auto h = static_cast<std::size_t>(d.hotness[t]);
        std::vector<int32_t> bag;
        for (std::size_t k = 0; k < h; ++k) bag.push_back(static_cast<int32_t>(d.ids[t][static_cast<std::size_t>(i) * h + k]));
        s.bags.push_back(std::move(bag));
      }
      out.push_back(std::move(s));
    }
  return out;
}

std::vector<FlatSample> read_all(BatchSource& source, int64_t batch_size) {
  std::vector<FlatSample> out;
  Batch batch;
  while (source.next(batch, batch_size)) testing::flatten(batch, out);
  return out;
}

// Three days in three layouts: stored int32 members with [n, 1] int32 labels; some
// deflated int64 members with [n] float32 labels; a ZIP64 archive of deflated members,
// .npy version 2.0 and uint8 labels.
struct ThreeDays {
  std::vector<npy::Day> days;
  std::string dir;
};

ThreeDays write_three_days(const TempDir& tmp) {
  ThreeDays out;
  out.dir = tmp.file("days");
  std::filesystem::create_directories(out.dir);
  const auto rows = table_rows();
  out.days = {npy::make_day(1, 37, rows), npy::make_day(2, 50, rows), npy::make_day(3, 23, rows)};
  npy::DayOptions o0;
  npy::write_day(out.dir + "/day_0", out.days[0], o0);
  npy::DayOptions o1;
  o1.sparse_descr = "<i8";
  o1.label_descr = "<f4";
  o1.labels_2d = false;
  o1.deflate = {0, 5, 20, 25};
  npy::write_day(out.dir + "/day_1", out.days[1], o1);
  npy::DayOptions o2;
  o2.zip64 = true;
  o2.npy_major = 2;
  o2.label_descr = "|u1";
  for (int t = 0; t < kTables; ++t) o2.deflate.insert(t);
  npy::write_day(out.dir + "/day_2", out.days[2], o2);
  return out;
}

// ------------------------------------------------------------------ .npy headers

TEST(NpyHeader, ParsesWhatNumpyWrites) {
  const std::vector<float> v(3 * 13, 0.5f);
  const std::string written = npy::npy_of("<f4", {3, 13}, v);
  const NpyHeader h = parse_npy_header(written.data(), written.size(), "a.npy");
  EXPECT_EQ(h.type, NpyType::f4);
  EXPECT_EQ(h.shape, (std::vector<int64_t>{3, 13}));
  EXPECT_EQ(h.header_bytes % 64, 0);
  EXPECT_EQ(h.data_bytes(), 3 * 13 * 4);
  // hetrec's own writer gives numpy's bytes.
  EXPECT_EQ(make_npy_header(NpyType::f4, {3, 13}), written.substr(0, static_cast<std::size_t>(h.header_bytes)));
  EXPECT_EQ(make_npy_header(NpyType::i8, {7}), npy::npy("<i8", {7}, nullptr, 0));

  for (int major : {2, 3}) {
    const std::string w = npy::npy("<i4", {5, 2}, nullptr, 0, major);
    const NpyHeader hv = parse_npy_header(w.data(), w.size(), "v.npy");
    EXPECT_EQ(hv.major, major);
    EXPECT_EQ(hv.type, NpyType::i4);
    EXPECT_EQ(hv.header_bytes, static_cast<int64_t>(w.size()));
  }
  // Key order, double quotes, Python 2 long suffixes, a 1-D and a 0-D shape.
  auto with_dict = [](const std::string& dict) {
    std::string s = "\x93NUMPY";
    s += '\x01';
    s += '\0';
    s += static_cast<char>(dict.size() & 0xff);
    s += static_cast<char>(dict.size() >> 8);
    return s + dict;
  };
  const std::string a = with_dict("{\"shape\": (10L, 3L), \"fortran_order\": False, \"descr\": \"|u1\"}\n");
  const NpyHeader ha = parse_npy_header(a.data(), a.size(), "a.npy");
  EXPECT_EQ(ha.type, NpyType::u1);
  EXPECT_EQ(ha.shape, (std::vector<int64_t>{10, 3}));
  const std::string b = with_dict("{'descr': '<f8', 'fortran_order': False, 'shape': (4,)}   \n");
  EXPECT_EQ(parse_npy_header(b.data(), b.size(), "b.npy").shape, (std::vector<int64_t>{4}));
  const std::string c = with_dict("{'descr': '<i8', 'fortran_order': False, 'shape': ()}\n");
  EXPECT_EQ(parse_npy_header(c.data(), c.size(), "c.npy").elements(), 1);
}

TEST(NpyHeader, EveryTruncationIsADataErrorNamingTheArray) {
  const std::string whole = npy::npy("<i4", {100, 26}, nullptr, 0);
  for (std::size_t n = 0; n < whole.size(); ++n) {
    try {
      parse_npy_header(whole.data(), n, "t.npy");
      ADD_FAILURE() << "a header cut to " << n << " bytes was accepted";
    } catch (const DataError& e) {
      EXPECT_NE(std::string(e.what()).find("t.npy"), std::string::npos) << e.what();
    }
  }
}

TEST(NpyHeader, RefusesMalformedDicts) {
  auto with_dict = [](const std::string& dict) {
    std::string s = "\x93NUMPY";
    s += '\x01';
    s += '\0';
    s += static_cast<char>(dict.size() & 0xff);
    s += static_cast<char>(dict.size() >> 8);
    return s + dict;
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{'descr': '<f4', 'fortran_order': True, 'shape': (3, 13), }\n", "Fortran"},
      {"{'descr': '>i4', 'fortran_order': False, 'shape': (3,), }\n", "big-endian"},
      {"{'descr': '<c8', 'fortran_order': False, 'shape': (3,), }\n", "element type '<c8'"},
      {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (3,), }\n", "structured"},
      {"{'descr': '<f4', 'shape': (3,), }\n", "lacks the key 'fortran_order'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'x': 1}\n", "unexpected key 'x'"},
      {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (3,)}\n", "appears twice"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (-3,), }\n", "non-negative integer"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }\n", "2^62"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (4611686018427387904, 4), }\n", "2^63 bytes"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (3,), } junk\n", "after the closing"},
      {"{'descr': '<f4', 'fortran_order': maybe, 'shape': (3,), }\n", "True or False"},
      {"{'descr': '<f\\x34', 'fortran_order': False, 'shape': (3,), }\n", "escape"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (3,), \xff}\n", "non-ASCII"},
  };
  for (const auto& [dict, what] : cases) {
    const std::string h = with_dict(dict);
    try {
      parse_npy_header(h.data(), h.size(), "bad.npy");
      ADD_FAILURE() << "accepted: " << dict;
    } catch (const DataError& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << dict << " -> " << e.what();
      EXPECT_NE(std::string(e.what()).find("bad.npy"), std::string::npos) << e.what();
    }
  }
  std::string bad_magic = npy::npy("<f4", {1}, nullptr, 0);
  bad_magic[1] = 'X';
  EXPECT_THROW(parse_npy_header(bad_magic.data(), bad_magic.size(), "m.npy"), DataError);
  std::string bad_version = npy::npy("<f4", {1}, nullptr, 0);
  bad_version[6] = 4;
  EXPECT_THROW(parse_npy_header(bad_version.data(), bad_version.size(), "m.npy"), DataError);
}

// ------------------------------------------------------------------ the reader

TEST(MlperfMultihot, ReadsManyDaysAsOneDatasetInEveryLayout) {
  TempDir tmp;
  const ThreeDays three = write_three_days(tmp);
  const std::vector<FlatSample> want = expected_samples(three.days);
  ASSERT_EQ(want.size(), 110u);
  for (const auto& [batch, threads] : std::vector<std::pair<int64_t, int>>{{16, 1}, {1000, 4}, {1, 2}}) {
    MlperfMultihotSource source(three.dir, mlperf_spec(), "data.train_path", threads);
    EXPECT_EQ(source.size_hint(), 110);
    EXPECT_EQ(source.days(), 3);
    EXPECT_EQ(read_all(source, batch), want) << "batch " << batch << ", threads " << threads;
    EXPECT_EQ(source.position(), 110);
  }
  MlperfMultihotSource source(three.dir, mlperf_spec());
  EXPECT_NE(source.describe().find("3 days"), std::string::npos) << source.describe();
  EXPECT_NE(source.describe().find("30 deflated"), std::string::npos) << source.describe();
}

TEST(MlperfMultihot, SeeksToAnyDayAndRowIncludingBackwardsInDeflatedMembers) {
  TempDir tmp;
  const ThreeDays three = write_three_days(tmp);
  const std::vector<FlatSample> want = expected_samples(three.days);
  MlperfMultihotSource source(three.dir, mlperf_spec(), "", 2);
  Batch batch;
  for (int64_t at : {100, 40, 90, 3, 87, 86, 36, 109, 0, 60, 50}) {
    source.seek(at);
    ASSERT_TRUE(source.next(batch, 5));
    std::vector<FlatSample> got;
    testing::flatten(batch, got);
    ASSERT_EQ(got.size(), static_cast<std::size_t>(std::min<int64_t>(5, 110 - at)));
    for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], want[static_cast<std::size_t>(at) + i]) << at;
    EXPECT_EQ(source.position(), at + static_cast<int64_t>(got.size()));
  }
  source.seek(110);
  EXPECT_FALSE(source.next(batch, 5));
  EXPECT_THROW(source.seek(111), DataError);
  EXPECT_THROW(source.seek(-1), DataError);
}

TEST(MlperfMultihot, DaysFromDirectoriesGlobsRangesAndLists) {
  TempDir tmp;
  const std::string dir = tmp.file("d");
  std::filesystem::create_directories(dir);
  const auto rows = table_rows();
  for (int d : {0, 1, 2, 10}) npy::write_day(dir + "/day_" + std::to_string(d), npy::make_day(static_cast<uint64_t>(d), 2, rows));
  auto names = [&](const std::vector<std::string>& prefixes) {
    std::vector<std::string> out;
    for (const auto& p : prefixes) out.push_back(std::filesystem::path(p).filename().string());
    return out;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(names(expand_mlperf_days(dir, "k")), (V{"day_0", "day_1", "day_2", "day_10"}));  // by number
  EXPECT_EQ(names(expand_mlperf_days(dir + "/day_*", "k")), (V{"day_0", "day_1", "day_2", "day_10"}));
  EXPECT_EQ(names(expand_mlperf_days(dir + "/day_{0..2}", "k")), (V{"day_0", "day_1", "day_2"}));
  EXPECT_EQ(names(expand_mlperf_days(dir + "/day_10, " + dir + "/day_0_dense.npy", "k")), (V{"day_10", "day_0"}));
  EXPECT_EQ(names(expand_mlperf_days(dir + "/day_1?", "k")), (V{"day_10"}));
  EXPECT_THROW(expand_mlperf_days(dir + "/day_0," + dir + "/day_{0..1}", "k"), ConfigError);  // day 0 twice
  EXPECT_THROW(expand_mlperf_days(dir + "/day_{2..1}", "k"), ConfigError);
  EXPECT_THROW(expand_mlperf_days(dir + ",", "k"), ConfigError);
  EXPECT_THROW(expand_mlperf_days(dir + "/night_*", "k"), IoError);
  std::filesystem::create_directories(tmp.file("empty"));
  EXPECT_THROW(expand_mlperf_days(tmp.file("empty"), "k"), IoError);
  MlperfMultihotSource some(dir + "/day_{1..2}", mlperf_spec());
  EXPECT_EQ(some.size_hint(), 4);
  // A named day that does not exist: IoError naming the file and the key.
  try {
    MlperfMultihotSource missing(dir + "/day_5", mlperf_spec(), "data.train_path");
    ADD_FAILURE() << "a missing day was accepted";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("day_5_dense.npy"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("data.train_path"), std::string::npos) << e.what();
  }
}

// ------------------------------------------------------------------ conversion

TEST(MlperfMultihot, ConvertedFileIsBitIdenticalToOneWrittenFromTheArrays) {
  TempDir tmp;
  const ThreeDays three = write_three_days(tmp);
  const FeatureSpec spec = mlperf_spec();
  constexpr int64_t kGroup = 32;  // several row groups, one of them spanning two days

  // The reference: every sample of the arrays in one batch, written straight to the format.
  BinaryHeader header;
  header.num_dense = kDense;
  for (const TableConfig& t : spec.tables) header.rows.push_back(t.rows);
  header.group_samples = kGroup;
  header.mapping = IdMapping::modulo;
  const std::vector<FlatSample> want = expected_samples(three.days);
  const auto n = static_cast<int64_t>(want.size());
  Batch all;
  all.reset(n, kDense, kTables);
  for (int64_t b = 0; b < n; ++b) {
    all.labels[static_cast<std::size_t>(b)] = want[static_cast<std::size_t>(b)].label;
    std::copy(want[static_cast<std::size_t>(b)].dense.begin(), want[static_cast<std::size_t>(b)].dense.end(),
              all.dense.begin() + b * kDense);
  }
  for (int t = 0; t < kTables; ++t)
    for (int64_t b = 0; b < n; ++b) {
      for (int32_t id : want[static_cast<std::size_t>(b)].bags[static_cast<std::size_t>(t)]) all.ids.push_back(id);
      all.offsets[static_cast<std::size_t>(t * n + b + 1)] = static_cast<int32_t>(all.ids.size());
    }
  {
    BinaryWriter writer(tmp.file("direct.hbin"), header);
    writer.append(all);
    writer.finish();
  }

  std::vector<ConvertProgress> seen;
  const ConvertReport r = convert_mlperf_to_binary(three.dir, tmp.file("converted.hbin"), spec, 3, kGroup,
                                                   [&](const ConvertProgress& p) { seen.push_back(p); });
  EXPECT_EQ(r.samples, 110);
  EXPECT_EQ(r.groups, 4);
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.front().samples_done, 0);
  EXPECT_EQ(seen.back().samples_done, 110);
  EXPECT_EQ(seen.back().samples, 110);
  const std::vector<char> converted = testing::read_bytes(tmp.file("converted.hbin"));
  ASSERT_FALSE(converted.empty());
  EXPECT_TRUE(converted == testing::read_bytes(tmp.file("direct.hbin"))) << "the converted file differs";

  // And the binary reader gives back the arrays.
  BinarySource back(tmp.file("converted.hbin"), spec);
  EXPECT_EQ(read_all(back, 7), want);

  // The output may not be one of the inputs.
  EXPECT_THROW(convert_mlperf_to_binary(three.dir, three.dir + "/day_1_labels.npy", spec), ConfigError);
  EXPECT_EQ(testing::read_bytes(three.dir + "/day_1_labels.npy").size() > 0, true);
}

// ------------------------------------------------------------------ errors

// Writes one day (37 samples) into a fresh directory after `edit` changed its arrays or
// options, and returns the message of the DataError that opening and reading it gives.
std::string data_error(const TempDir& tmp, const std::string& name, const std::function<void(npy::Day&, npy::DayOptions&)>& edit,
                       const std::function<void(const std::string& prefix)>& damage = {}) {
  const std::string dir = tmp.file(name);
  std::filesystem::create_directories(dir);
  npy::Day day = npy::make_day(9, 37, table_rows());
  npy::DayOptions options;
  options.deflate = {3, 11};
  edit(day, options);
  npy::write_day(dir + "/day_0", day, options);
  if (damage) damage(dir + "/day_0");
  try {
    MlperfMultihotSource source(dir, mlperf_spec(), "data.train_path", 2);
    read_all(source, 16);
  } catch (const DataError& e) {
    return e.what();
  }
  ADD_FAILURE() << name << ": no DataError";
  return "";
}

void expect_has(const std::string& message, const std::vector<std::string>& parts) {
  for (const std::string& p : parts) EXPECT_NE(message.find(p), std::string::npos) << "'" << p << "' not in: " << message;
}

TEST(MlperfMultihot, MalformedDaysAreDataErrorsNamingTheFile) {
  TempDir tmp;
  auto nothing = [](npy::Day&, npy::DayOptions&) {};
  auto truncate = [](const std::string& file, int64_t by) {
    std::filesystem::resize_file(file, std::filesystem::file_size(file) - static_cast<std::uintmax_t>(by));
  };
  expect_has(data_error(tmp, "truncated", nothing, [&](const std::string& p) { truncate(p + "_dense.npy", 5); }),
             {"day_0_dense.npy", "truncated"});
  expect_has(data_error(tmp, "truncated_header", nothing,
                        [&](const std::string& p) { std::filesystem::resize_file(p + "_dense.npy", 40); }),
             {"day_0_dense.npy", "truncated"});
  expect_has(data_error(tmp, "dtype", nothing,
                        [&](const std::string& p) {
                          const std::vector<double> v(37 * 13, 1.0);
                          npy::write_file(p + "_dense.npy", npy::npy_of("<f8", {37, 13}, v));
                        }),
             {"day_0_dense.npy", "'<f8'", "expected float32"});
  expect_has(data_error(tmp, "fortran", nothing,
                        [&](const std::string& p) {
                          const std::vector<float> v(37 * 13, 1.0f);
                          npy::write_file(p + "_dense.npy", npy::npy("<f4", {37, 13}, v.data(), v.size() * 4, 1, true));
                        }),
             {"day_0_dense.npy", "Fortran"});
  expect_has(data_error(tmp, "counts", nothing,
                        [&](const std::string& p) {
                          const std::vector<int32_t> v(36, 0);
                          npy::write_file(p + "_labels.npy", npy::npy_of("<i4", {36, 1}, v));
                        }),
             {"day_0_labels.npy", "36 samples", "37"});
  expect_has(data_error(tmp, "member_counts", [](npy::Day& d, npy::DayOptions&) { (void)d; },
                        [&](const std::string& p) {
                          const std::vector<float> v(38 * 13, 0.0f);
                          npy::write_file(p + "_dense.npy", npy::npy_of("<f4", {38, 13}, v));
                          const std::vector<int32_t> y(38, 0);
                          npy::write_file(p + "_labels.npy", npy::npy_of("<i4", {38, 1}, y));
                        }),
             {"day_0_sparse_multi_hot.npz, member '0.npy'", "37 samples", "38"});
  expect_has(data_error(tmp, "missing7", [](npy::Day&, npy::DayOptions& o) { o.skip_members = {7}; }),
             {"day_0_sparse_multi_hot.npz", "no member '7.npy'", "table 7"});
  expect_has(data_error(tmp, "id_range",
                        [](npy::Day& d, npy::DayOptions&) {
                          d.ids[4][static_cast<std::size_t>(21 * d.hotness[4] + 1)] = 20 + 7 * 4;  // = rows
                        }),
             {"day_0_sparse_multi_hot.npz, member '4.npy'", "sample 21, table 4", "id 48 outside [0, 48)"});
  expect_has(data_error(tmp, "id_negative_deflated",
                        [](npy::Day& d, npy::DayOptions& o) {
                          o.sparse_descr = "<i8";
                          d.ids[11][static_cast<std::size_t>(30 * d.hotness[11])] = -4;
                        }),
             {"member '11.npy'", "sample 30, table 11", "id -4"});
  expect_has(data_error(tmp, "label", [](npy::Day& d, npy::DayOptions&) { d.labels[17] = 2; }),
             {"day_0_labels.npy", "sample 17", "label 2"});
  expect_has(data_error(tmp, "nan",
                        [](npy::Day& d, npy::DayOptions&) { d.dense[13 * 8 + 4] = std::numeric_limits<float>::quiet_NaN(); }),
             {"day_0_dense.npy", "sample 8", "dense feature 4", "finite"});
  expect_has(data_error(tmp, "hotness", [](npy::Day& d, npy::DayOptions&) {
               d.hotness[3] = 3;
               d.ids[3].assign(static_cast<std::size_t>(37 * 3), 1);
             }),
             {"member '3.npy'", "3 ids per sample", "hotness 2"});
  expect_has(data_error(tmp, "sparse_dtype", [](npy::Day&, npy::DayOptions& o) { o.sparse_descr = "<u4"; }),
             {"member '0.npy'", "expected int32"});
  expect_has(data_error(tmp, "label_dtype", nothing,
                        [&](const std::string& p) {
                          const std::vector<int32_t> v(37 * 2, 0);
                          npy::write_file(p + "_labels.npy", npy::npy_of("<i4", {37, 2}, v));
                        }),
             {"day_0_labels.npy", "shape (37, 2)"});
  expect_has(data_error(tmp, "npz_cut", nothing,
                        [&](const std::string& p) { truncate(p + "_sparse_multi_hot.npz", 300); }),
             {"day_0_sparse_multi_hot.npz", "not a readable .npz"});
  expect_has(data_error(tmp, "npz_foreign", nothing,
                        [&](const std::string& p) { npy::write_file(p + "_sparse_multi_hot.npz", std::string(500, 'x')); }),
             {"day_0_sparse_multi_hot.npz", "end-of-central-directory"});
  expect_has(data_error(tmp, "extra_member", nothing,
                        [&](const std::string& p) {
                          npy::Day d = npy::make_day(9, 37, table_rows());
                          std::vector<npy::ZipMember> m;
                          for (std::size_t t = 0; t < 26; ++t) m.push_back({std::to_string(t) + ".npy", npy::table_npy(d, t, "<i4"), false});
                          m.push_back({"arr_0.npy", npy::table_npy(d, 0, "<i4"), false});
                          npy::write_file(p + "_sparse_multi_hot.npz", npy::zip(m));
                        }),
             {"unexpected member 'arr_0.npy'"});
  // A damaged deflated member: the stream fails to inflate or its CRC-32 differs.
  expect_has(data_error(tmp, "deflate_damage", nothing,
                        [&](const std::string& p) {
                          npy::Day d = npy::make_day(9, 37, table_rows());
                          std::vector<npy::ZipMember> m;
                          for (std::size_t t = 0; t < 26; ++t) m.push_back({std::to_string(t) + ".npy", npy::table_npy(d, t, "<i4"), t == 20});
                          std::string z = npy::zip(m);
                          const std::size_t at = z.find("20.npy") + 6 + 200;  // inside member 20's compressed bytes
                          z[at] = static_cast<char>(z[at] ^ 0x5a);
                          z[at + 1] = static_cast<char>(z[at + 1] ^ 0x33);
                          npy::write_file(p + "_sparse_multi_hot.npz", z);
                        }),
             {"day_0_sparse_multi_hot.npz, member '20.npy'"});
}

// A table with variable bags takes members 1 to 2 * hotness - 1 wide; a table of more
// rows than int32 ids address is refused.
TEST(MlperfMultihot, VariableBagWidthsAndTableSizesAreBounded) {
  TempDir tmp;
  FeatureSpec spec = mlperf_spec();
  spec.tables[3].variable_bags = true;  // hotness 2: widths 1 to 3
  for (const auto& [width, ok] : std::vector<std::pair<int, bool>>{{1, true}, {3, true}, {4, false}}) {
    const std::string dir = tmp.file("w" + std::to_string(width));
    std::filesystem::create_directories(dir);
    std::vector<int> hot = npy::kMlperfHotness;
    hot[3] = width;
    const npy::Day day = npy::make_day(6, 9, table_rows(), hot);
    npy::write_day(dir + "/day_0", day);
    if (ok) {
      MlperfMultihotSource source(dir, spec);
      EXPECT_EQ(read_all(source, 4), expected_samples({day})) << width;
    } else {
      EXPECT_THROW(MlperfMultihotSource(dir, spec), DataError) << width;
    }
  }
  FeatureSpec huge = mlperf_spec();
  huge.tables[0].rows = int64_t{1} << 31;
  EXPECT_THROW(MlperfMultihotSource(tmp.file("w1"), huge), ConfigError);
}

// Every truncation and many single-byte changes of a day's files are accepted (as
// other values) or rejected with a DataError: never a crash, a hang or another error.
TEST(MlperfMultihot, EveryCutAndFlippedByteIsADataErrorOrValidData) {
  TempDir tmp;
  const std::string dir = tmp.file("sweep");
  std::filesystem::create_directories(dir);
  const std::string prefix = dir + "/day_0";
  npy::Day day = npy::make_day(4, 3, table_rows());
  npy::DayOptions options;
  options.deflate = {1, 20};
  options.zip64 = true;
  npy::write_day(prefix, day, options);
  int rejected = 0, tries = 0;
  auto attempt = [&] {
    ++tries;
    try {
      MlperfMultihotSource source(dir, mlperf_spec());
      read_all(source, 2);
    } catch (const DataError&) {
      ++rejected;
    }
  };
  for (const std::string suffix : {"_sparse_multi_hot.npz", "_labels.npy"}) {
    const std::string file = prefix + suffix;
    const std::vector<char> good = testing::read_bytes(file);
    const std::size_t step = suffix[1] == 's' ? 7 : 1;
    for (std::size_t n = 0; n < good.size(); n += step) {
      testing::write_bytes(file, std::vector<char>(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n)));
      attempt();
    }
    for (std::size_t i = 0; i < good.size(); i += step) {
      std::vector<char> bad = good;
      bad[i] = static_cast<char>(bad[i] ^ 0xa5);
      testing::write_bytes(file, bad);
      attempt();
    }
    testing::write_bytes(file, good);
  }
  EXPECT_GT(tries, 1000);
  EXPECT_GT(rejected, tries / 4);
  MlperfMultihotSource source(dir, mlperf_spec());
  EXPECT_EQ(read_all(source, 2), expected_samples({day}));
}

}  // namespace
}  // namespace hetrec
