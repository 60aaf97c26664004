// Fuzz target: Criteo TSV lines and files.
#include <cmath>
#include <string>
#include <vector>

#include "data/criteo_tsv.h"
#include "harness/batch_checks.h"
#include "harness/fuzz_support.h"
#include "harness/fuzz_targets.h"

namespace hetrec::fuzz {
namespace {

// Rows per table of the MLPerf DLRM-DCNv2 reference workload (Criteo 1TB, 26 tables).
constexpr int64_t kReferenceRows[] = {40000000, 39060, 17295, 7424,    20265,    3,        7122,   1543,    63,
                                      40000000, 3067956, 405282, 10,   2209,     11938,    155,    4,       976,
                                      14,       40000000, 40000000, 40000000, 590152, 12973, 108,    36};
constexpr int64_t kInt32Max = 2147483647;

// Mode byte: bits 0-1 layout, bit 2 hash mapping, bit 3 whole file, bit 4 skip bad lines,
// bit 5 two parse threads, bits 6-7 batch size.
constexpr int64_t kBatchSizes[] = {1, 3, 64, 1000};

CriteoLayout layout_for(uint8_t mode) {
  CriteoLayout layout;
  switch (mode & 3) {
    case 0:  // the real Criteo width
      layout.num_dense = 13;
      layout.rows.assign(std::begin(kReferenceRows), std::end(kReferenceRows));
      break;
    case 1:  // a one-row table, a small one and the largest int32 ids can address
      layout.num_dense = 2;
      layout.rows = {1, 7, kInt32Max};
      break;
    case 2:  // no dense features
      layout.num_dense = 0;
      layout.rows = {5};
      layout.missing_id = 4;
      break;
    default:  // no tables
      layout.num_dense = 1;
      break;
  }
  layout.mapping = (mode & 4) ? CategoricalMapping::hash : CategoricalMapping::modulo;
  return layout;
}

void check_line(const ParsedLine& line, const CriteoLayout& layout) {
  if (line.label != 0.0f && line.label != 1.0f) finding("label is not 0 or 1");
  if (static_cast<int>(line.dense.size()) != layout.num_dense || static_cast<int>(line.ids.size()) != layout.num_tables())
    finding("parsed line has the wrong number of values");
  for (float x : line.dense)
    if (!std::isfinite(x) || x < 0.0f) finding("dense value " + std::to_string(x) + " is not log(max(x,0)+1)");
  for (std::size_t t = 0; t < line.ids.size(); ++t)
    if (line.ids[t] < 0 || line.ids[t] >= layout.rows[t]) finding("id outside its table");
}

void parse_lines(std::string_view text, const CriteoLayout& layout) {
  int64_t line_no = 0;
  ParsedLine parsed;
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    ++line_no;
    if (accepted([&] { parse_criteo_line(line, layout, "fuzz.tsv", line_no, parsed); })) check_line(parsed, layout);
  }
}

void stream_file(std::string_view text, const CriteoLayout& layout, uint8_t mode) {
  const MemoryFile file(text);
  const OnError on_error = (mode & 16) ? OnError::skip : OnError::fail;
  const int threads = (mode & 32) ? 2 : 1;
  const int64_t batch_size = kBatchSizes[mode >> 6];
  std::vector<float> labels;  // every sample's label, to check seek() against
  accepted([&] {
    CriteoTsvSource source(file.path(), layout, on_error, threads, "fuzz");
    Batch batch;
    while (source.next(batch, batch_size)) {
      check_batch(batch, layout.num_dense, layout.rows, batch_size, static_cast<int64_t>(labels.size()));
      for (int t = 0; t < layout.num_tables(); ++t)
        for (int64_t s = 0; s < batch.size; ++s)
          if (batch.bag_end(t, s) - batch.bag_begin(t, s) != 1) finding("a TSV bag does not hold exactly one id");
      labels.insert(labels.end(), batch.labels.begin(), batch.labels.end());
    }
    const auto delivered = static_cast<int64_t>(labels.size());
    if (source.position() != delivered || source.counters().samples != delivered)
      finding("position " + std::to_string(source.position()) + " after delivering " + std::to_string(delivered));
    // Seeking back re-reads the same samples.
    const int64_t middle = delivered / 2;
    source.seek(middle);
    if (source.next(batch, 1)) {
      if (batch.first_sample != middle || batch.labels[0] != labels[static_cast<std::size_t>(middle)])
        finding("seek(" + std::to_string(middle) + ") delivered another sample");
    } else if (middle < delivered) {
      finding("seek(" + std::to_string(middle) + ") then next() delivered nothing");
    }
  });
}

}  // namespace

void criteo_tsv(std::span<const uint8_t> data) {
  FuzzInput in(data);
  const uint8_t mode = in.byte();
  const CriteoLayout layout = layout_for(mode);
  const std::string_view text = in.rest();
  if (mode & 8) stream_file(text, layout, mode);
  else parse_lines(text, layout);
}

}  // namespace hetrec::fuzz
