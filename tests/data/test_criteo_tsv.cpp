#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"
#include "core/rng.h"
#include "data/criteo_tsv.h"
#include "data_test_util.h"

using namespace hetrec;
using hetrec::testing::FlatSample;
using hetrec::testing::flatten;
using hetrec::testing::read_all;
using hetrec::testing::TempDir;

namespace {

// 3 integer and 2 categorical fields: 6 fields a line.
CriteoLayout small_layout(CategoricalMapping mapping = CategoricalMapping::modulo) {
  CriteoLayout layout;
  layout.num_dense = 3;
  layout.rows = {1000, 7};
  layout.mapping = mapping;
  layout.missing_id = 5;
  return layout;
}

std::string error_of(std::string_view line, const CriteoLayout& layout = small_layout()) {
  try {
    parse_criteo_line(line, layout, "train.tsv", 1234);
  } catch (const DataError& e) {
    return e.what();
  }
  return "";
}

// A raw record and its expected parse, computed here in double from the raw values.
struct RawLine {
  std::string text;
  FlatSample expected;
  bool valid = true;
};

RawLine random_line(Rng& rng, const CriteoLayout& layout, int64_t index) {
  RawLine line;
  line.expected.index = index;
  const int label = static_cast<int>(rng.below(2));
  line.text = std::to_string(label);
  line.expected.label = static_cast<float>(label);
  for (int j = 0; j < layout.num_dense; ++j) {
    line.text += '\t';
    if (rng.uniform() < 0.2) {  // missing
      line.expected.dense.push_back(0.0f);
      continue;
    }
    const int64_t value = static_cast<int64_t>(rng.below(2000000)) - 1000;
    line.text += std::to_string(value);
    line.expected.dense.push_back(static_cast<float>(std::log(static_cast<double>(std::max<int64_t>(value, 0)) + 1.0)));
  }
  for (int t = 0; t < layout.num_tables(); ++t) {
    line.text += '\t';
    if (rng.uniform() < 0.2) {
      line.expected.bags.push_back({static_cast<int32_t>(layout.missing_id)});
      continue;
    }
    const auto value = static_cast<uint32_t>(rng.next_u32());
    line.text += fmt::format("{:08x}", value);
    line.expected.bags.push_back({static_cast<int32_t>(value % static_cast<uint64_t>(layout.rows[static_cast<std::size_t>(t)]))});
  }
  return line;
}

}  // namespace

TEST(ParseCriteoLine, ValuesAndTransforms) {
  const CriteoLayout layout = small_layout();
  const ParsedLine p = parse_criteo_line("1\t0\t-7\t123456789012\t0000abcd\tFFFFFFFF", layout, "f", 1);
  EXPECT_EQ(p.label, 1.0f);
  ASSERT_EQ(p.dense.size(), 3u);
  EXPECT_EQ(p.dense[0], 0.0f);
  EXPECT_EQ(p.dense[1], 0.0f);  // negative counts clamp to 0
  EXPECT_EQ(p.dense[2], static_cast<float>(std::log(123456789012.0 + 1.0)));
  ASSERT_EQ(p.ids.size(), 2u);
  EXPECT_EQ(p.ids[0], static_cast<int32_t>(0xabcdu % 1000u));
  EXPECT_EQ(p.ids[1], static_cast<int32_t>(0xFFFFFFFFull % 7u));
  // Shorter hex strings are the same 32-bit value without leading zeros.
  EXPECT_EQ(parse_criteo_line("0\t\t\t\tabcd\t1f", layout, "f", 1).ids,
            (std::vector<int32_t>{static_cast<int32_t>(0xabcdu % 1000u), static_cast<int32_t>(0x1fu % 7u)}));
  // Hash mapping: mix64 of the value, modulo the rows.
  const ParsedLine h = parse_criteo_line("0\t1\t2\t3\t0000abcd\t00000010", small_layout(CategoricalMapping::hash), "f", 1);
  EXPECT_EQ(h.ids[0], static_cast<int32_t>(mix64(0xabcd) % 1000));
  EXPECT_EQ(h.ids[1], static_cast<int32_t>(mix64(0x10) % 7));
}

TEST(ParseCriteoLine, EveryKindOfEmptyField) {
  const CriteoLayout layout = small_layout();
  ParsedLine p = parse_criteo_line("0\t\t\t\t\t", layout, "f", 1);
  EXPECT_EQ(p.label, 0.0f);
  EXPECT_EQ(p.dense, (std::vector<float>{0.0f, 0.0f, 0.0f}));
  EXPECT_EQ(p.ids, (std::vector<int32_t>{5, 5}));  // missing_categorical_id
  p = parse_criteo_line("1\t4\t\t9\t\t000000ff", layout, "f", 1);
  EXPECT_EQ(p.dense[0], static_cast<float>(std::log(5.0)));
  EXPECT_EQ(p.dense[1], 0.0f);
  EXPECT_EQ(p.ids[0], 5);
  EXPECT_EQ(p.ids[1], static_cast<int32_t>(255 % 7));
  EXPECT_NE(error_of("\t1\t2\t3\ta\tb").find("field label: expected 0 or 1, got ''"), std::string::npos);
}

TEST(ParseCriteoLine, BadInputsNameFileLineAndField) {
  struct Case {
    std::string line;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"1\t2\t3\t4\ta", "train.tsv:1234: expected 6 tab-separated fields (label, 3 integer, 2 categorical), got 5"},
      {"1\t2\t3\t4\ta\tb\tc", "train.tsv:1234: expected 6 tab-separated fields (label, 3 integer, 2 categorical), got 7"},
      {"", "got 1"},
      {"1\t2\tabc\t4\ta\tb", "train.tsv:1234: field I2: expected a decimal integer, got 'abc'"},
      {"1\t2\t1.5\t4\ta\tb", "field I2: expected a decimal integer, got '1.5'"},
      {"1\t+2\t3\t4\ta\tb", "field I1: expected a decimal integer, got '+2'"},
      {"1\t 2\t3\t4\ta\tb", "field I1: expected a decimal integer, got ' 2'"},
      {"1\t99999999999999999999\t3\t4\ta\tb", "field I1: expected a decimal integer within the signed 64-bit range"},
      {"1\t2\t3\t-99999999999999999999\ta\tb", "field I3: expected a decimal integer within the signed 64-bit range"},
      {"1\t2\t3\t4\tzz\tb", "train.tsv:1234: field C1: expected 8 hex digits, got 'zz'"},
      {"1\t2\t3\t4\ta\t0x1f", "field C2: expected 8 hex digits, got '0x1f'"},
      {"1\t2\t3\t4\t123456789\tb", "field C1: expected at most 8 hex digits, got '123456789'"},
      {"2\t2\t3\t4\ta\tb", "train.tsv:1234: field label: expected 0 or 1, got '2'"},
      {"01\t2\t3\t4\ta\tb", "field label: expected 0 or 1, got '01'"},
  };
  for (const Case& c : cases) {
    const std::string message = error_of(c.line);
    EXPECT_NE(message.find(c.expected), std::string::npos) << "line '" << c.line << "' gave: " << message;
  }
  // Long garbage is quoted in part only.
  const std::string long_field(500, 'x');
  EXPECT_LT(error_of("1\t" + long_field + "\t3\t4\ta\tb").size(), 200u);
}

TEST(CriteoLayout, MissingIdMustBeARowOfEveryTable) {
  DataConfig data;
  ModelConfig model = hetrec::testing::small_model(13);  // smallest table: 3 rows
  data.missing_categorical_id = 2;
  EXPECT_EQ(make_criteo_layout(data, model).rows.size(), 4u);
  data.missing_categorical_id = 3;
  try {
    make_criteo_layout(data, model);
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("data.missing_categorical_id = 3"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("t3"), std::string::npos) << e.what();
  }
}

TEST(CriteoTsvSource, StreamsAFileInOrder) {
  TempDir dir;
  const CriteoLayout layout = small_layout();
  Rng rng(4);
  std::string text;
  std::vector<FlatSample> expected;
  for (int64_t i = 0; i < 1000; ++i) {
    RawLine line = random_line(rng, layout, i);
    // Mixed line endings; the last line has no newline.
    text += line.text + (i == 999 ? "" : i % 3 == 0 ? "\r\n" : "\n");
    expected.push_back(line.expected);
  }
  const std::string path = dir.file("day.tsv");
  hetrec::testing::write_text(path, text);
  for (int threads : {1, 2}) {
    CriteoTsvSource source(path, layout, OnError::fail, threads);
    EXPECT_EQ(source.size_hint(), -1);
    const auto got = read_all(source, 64);
    ASSERT_EQ(got.size(), expected.size());
    for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], expected[i]) << "line " << i + 1;
    EXPECT_EQ(source.position(), 1000);
    EXPECT_EQ(source.counters().samples, 1000);
    EXPECT_EQ(source.counters().skipped_lines, 0);
    // seek re-reads from the start; it equals sequential reading.
    source.seek(437);
    Batch batch;
    ASSERT_TRUE(source.next(batch, 100));
    std::vector<FlatSample> part;
    flatten(batch, part);
    for (std::size_t k = 0; k < part.size(); ++k) EXPECT_EQ(part[k], expected[437 + k]);
    EXPECT_THROW(source.seek(1001), DataError);
  }
}

TEST(CriteoTsvSource, SkipModeCountsAndFailModeStops) {
  TempDir dir;
  const CriteoLayout layout = small_layout();
  Rng rng(8);
  std::string text;
  std::vector<FlatSample> good;
  int bad = 0;
  int64_t first_bad_line = 0;
  const std::vector<std::string> bad_lines = {"1\tx\t2\t3\ta\tb", "0\t1\t2", "5\t1\t2\t3\ta\tb", "1\t1\t2\t3\tgg\tb", ""};
  for (int64_t i = 0, index = 0; i < 600; ++i) {
    if (i % 50 == 17) {
      text += bad_lines[static_cast<std::size_t>(bad % 5)] + "\n";
      if (bad == 0) first_bad_line = i + 1;
      ++bad;
      continue;
    }
    RawLine line = random_line(rng, layout, index++);
    text += line.text + "\n";
    good.push_back(line.expected);
  }
  const std::string path = dir.file("dirty.tsv");
  hetrec::testing::write_text(path, text);

  CriteoTsvSource skip(path, layout, OnError::skip, 2);
  const auto got = read_all(skip, 64);
  ASSERT_EQ(got.size(), good.size());
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], good[i]);
  EXPECT_EQ(skip.counters().skipped_lines, bad);
  EXPECT_EQ(skip.counters().samples, static_cast<int64_t>(good.size()));
  // Seeking counts good samples only and recounts the skipped lines before them.
  skip.seek(100);
  EXPECT_EQ(skip.counters().skipped_lines, 2);  // lines 18 and 68 precede sample 100
  Batch batch;
  ASSERT_TRUE(skip.next(batch, 1));
  std::vector<FlatSample> one;
  flatten(batch, one);
  EXPECT_EQ(one[0], good[100]);

  CriteoTsvSource fail(path, layout, OnError::fail, 2);
  try {
    read_all(fail, 64);
    FAIL() << "expected DataError";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find(fmt::format("dirty.tsv:{}: field I1", first_bad_line)), std::string::npos)
        << e.what();
  }
}

TEST(CriteoTsvSource, FullCriteoWidthAndOpenErrors) {
  TempDir dir;
  CriteoLayout layout;
  layout.num_dense = 13;
  layout.rows.assign(26, 40000000);
  Rng rng(15);
  std::string text;
  std::vector<FlatSample> expected;
  // About 2 MB: lines straddle the reader's 1 MiB buffer, and one 1.5 MB malformed line
  // is longer than the buffer.
  for (int64_t i = 0; i < 6000; ++i) {
    if (i == 3000) text += "1\t" + std::string(1500000, '7') + "x\n";
    RawLine line = random_line(rng, layout, i);
    text += line.text + "\n";
    expected.push_back(line.expected);
  }
  const std::string path = dir.file("criteo.tsv");
  hetrec::testing::write_text(path, text);
  CriteoTsvSource source(path, layout, OnError::skip, 2);
  EXPECT_EQ(read_all(source, 512), expected);
  EXPECT_EQ(source.counters().skipped_lines, 1);
  try {
    CriteoTsvSource missing(dir.file("nope.tsv"), layout, OnError::fail, 1, "data.train_path");
    FAIL() << "expected IoError";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("nope.tsv"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("data.train_path"), std::string::npos);
  }
  // An empty file is an empty source.
  hetrec::testing::write_text(dir.file("empty.tsv"), "");
  CriteoTsvSource empty(dir.file("empty.tsv"), layout, OnError::fail);
  Batch batch;
  EXPECT_FALSE(empty.next(batch, 10));
}
