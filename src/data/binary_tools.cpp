#include "data/binary_tools.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"

namespace hetrec::inline data {
namespace {

IdMapping mapping_of(CategoricalMapping mapping) {
  return mapping == CategoricalMapping::modulo ? IdMapping::modulo : IdMapping::hash;
}

}  // namespace

ConvertReport convert_tsv_to_binary(const std::string& in_path, const std::string& out_path,
                                    const CriteoLayout& layout, const ConvertOptions& options) {
  check_binary_output(out_path, {{"the input", in_path}});
  CriteoTsvSource source(in_path, layout, options.on_error, options.threads);
  BinaryHeader header;
  header.num_dense = layout.num_dense;
  header.rows = layout.rows;
  header.group_samples = options.group_samples;
  header.mapping = mapping_of(layout.mapping);
  BinaryWriter writer(out_path, header);
  Batch batch;
  while (source.next(batch, kConvertBatchSamples)) writer.append(batch);
  const int64_t skipped = source.counters().skipped_lines;
  if (!options.allow_empty && writer.samples() == 0)
    throw DataError(skipped > 0 ? fmt::format("{}: no sample to write: all {} lines were malformed and skipped "
                                              "(data.on_error = \"skip\"); {} was not written",
                                              in_path, skipped, out_path)
                                : fmt::format("{}: no sample to write: the file holds no lines; {} was not written",
                                              in_path, out_path));
  writer.finish();
  return ConvertReport{writer.samples(), skipped, writer.groups(), writer.bytes()};
}

ConvertReport write_binary(BatchSource& source, int64_t first, int64_t samples, const std::string& out_path,
                           const BinaryHeader& header) {
  if (first < 0 || samples < 0) throw DataError(fmt::format("{}: cannot write {} samples from sample {}", out_path,
                                                            samples, first));
  // Put the source back where it was, whether the write succeeds or not.
  struct RestorePosition {
    BatchSource& source;
    int64_t saved;
    ~RestorePosition() {
      try {
        source.seek(saved);
      } catch (...) {  // a destructor must not throw; the write's own error is the one to report
      }
    }
  } restore{source, source.position()};
  BinaryWriter writer(out_path, header);
  source.seek(first);
  Batch batch;
  int64_t left = samples;
  while (left > 0 && source.next(batch, std::min(left, kConvertBatchSamples))) {
    writer.append(batch);
    left -= batch.size;
  }
  if (left > 0)
    throw DataError(fmt::format("{}: the source ({}) ended {} samples short of the {} requested", out_path,
                                source.describe(), left, samples));
  writer.finish();
  return ConvertReport{writer.samples(), source.counters().skipped_lines, writer.groups(), writer.bytes()};
}

ConvertReport write_synthetic_binary(SyntheticSource& source, int64_t samples, const std::string& out_path,
                                     int64_t group_samples) {
  if (samples > source.size_hint())
    throw ConfigError(fmt::format("{}: {} samples requested, the synthetic {} split holds {}", out_path, samples,
                                  split_name(source.split()), source.size_hint()));
  BinaryHeader header;
  header.num_dense = source.features().num_dense;
  for (const TableConfig& table : source.features().tables) header.rows.push_back(table.rows);
  header.group_samples = group_samples;
  header.mapping = IdMapping::generated;
  return write_binary(source, 0, samples, out_path, header);
}

BinaryInspection inspect_binary_file(const std::string& path) {
  BinaryFile file(path);
  const BinaryHeader& h = file.header();
  const auto tables = static_cast<std::size_t>(h.num_tables());
  std::vector<int64_t> id_min(tables, std::numeric_limits<int64_t>::max()), id_max(tables, -1), id_count(tables, 0);
  double label_sum = 0.0;
  int64_t checked_samples = 0;
  std::vector<std::string> failures;
  RowGroup group;
  for (int64_t g = 0; g < file.groups(); ++g) {
    try {
      file.read_group(g, group);
    } catch (const DataError& e) {
      failures.emplace_back(e.what());
      continue;
    }
    for (float y : group.labels) label_sum += y;
    checked_samples += group.size;
    for (std::size_t t = 0; t < tables; ++t) {
      for (int32_t id : group.ids[t]) {
        id_min[t] = std::min<int64_t>(id_min[t], id);
        id_max[t] = std::max<int64_t>(id_max[t], id);
      }
      id_count[t] += static_cast<int64_t>(group.ids[t].size());
    }
  }

  std::string out;
  out += fmt::format("file: {} ({} bytes)\n", path, file.file_bytes());
  out += fmt::format("format: hetrec binary columnar, version {}\n", h.version);
  out += fmt::format("dense features: {}\n", h.num_dense);
  out += fmt::format("tables: {} (ids: {})\n", h.num_tables(), id_mapping_name(h.mapping));
  for (std::size_t t = 0; t < tables; ++t) {
    if (id_count[t] == 0) {
      out += fmt::format("  table {}: {} rows, no ids\n", t, h.rows[t]);
      continue;
    }
    out += fmt::format("  table {}: {} rows, ids {}..{}, mean bag length {:.3f}\n", t, h.rows[t], id_min[t],
                       id_max[t], static_cast<double>(id_count[t]) / static_cast<double>(std::max<int64_t>(checked_samples, 1)));
  }
  out += fmt::format("row groups: {} of up to {} samples\n", file.groups(), h.group_samples);
  out += fmt::format("samples: {}\n", file.samples());
  if (checked_samples > 0)
    out += fmt::format("label mean: {:.6f}\n", label_sum / static_cast<double>(checked_samples));
  if (failures.empty()) {
    out += fmt::format("checksums: all {} row groups ok\n", file.groups());
  } else {
    out += fmt::format("checksums: {} of {} row groups failed\n", failures.size(), file.groups());
    for (const std::string& f : failures) out += "  " + f + "\n";
  }
  return BinaryInspection{std::move(out), std::move(failures)};
}

std::string inspect_binary(const std::string& path) { return inspect_binary_file(path).text; }

VerifyReport verify_binary(const std::string& path, const FeatureSpec& model, int threads,
                           const std::function<void(const VerifyProgress&)>& progress) {
  VerifyReport report;
  std::unique_ptr<BinaryFile> opened;
  try {
    opened = std::make_unique<BinaryFile>(path);
  } catch (const DataError& e) {
    report.failures.emplace_back(e.what());
    return report;
  }
  const BinaryFile& file = *opened;
  const BinaryHeader& h = file.header();
  report.samples = file.samples();
  report.groups = file.groups();
  report.bytes = file.file_bytes();

  // The file against the model, as training checks it (BinarySource), then the ids of
  // every table whose declared rows exceed the model's, against the model's rows.
  const bool shapes_fit = h.num_dense == model.num_dense && h.num_tables() == model.num_tables();
  if (!shapes_fit)
    report.failures.push_back(fmt::format("{}: holds {} dense features and {} tables, the config (model.num_dense, "
                                          "model.tables) has {} and {}",
                                          path, h.num_dense, h.num_tables(), model.num_dense, model.num_tables()));
  std::vector<int> narrower;  // tables whose ids are checked against the model's rows
  for (int t = 0; shapes_fit && t < h.num_tables(); ++t) {
    const TableConfig& table = model.tables[static_cast<std::size_t>(t)];
    if (h.rows[static_cast<std::size_t>(t)] <= table.rows) continue;
    narrower.push_back(t);
    report.failures.push_back(fmt::format("{}: table {} is declared with {} rows, more than model.tables[{}] ({}).rows "
                                          "= {}",
                                          path, t, h.rows[static_cast<std::size_t>(t)], t, table.name, table.rows));
  }

  VerifyProgress at{0, file.groups(), 0, file.file_bytes()};
  RowGroup group;
  for (int64_t g = 0; g < file.groups(); ++g) {
    try {
      opened->read_group(g, group, threads);
      for (int t : narrower) {
        const auto st = static_cast<std::size_t>(t);
        const int64_t rows = model.tables[st].rows;
        const auto& ids = group.ids[st];
        const auto bad = std::find_if(ids.begin(), ids.end(), [rows](int32_t id) { return id >= rows; });
        if (bad == ids.end()) continue;
        const auto k = bad - ids.begin();
        const auto& begin = group.bag_begin[st];
        const auto i = std::upper_bound(begin.begin(), begin.end(), k) - begin.begin() - 1;
        throw DataError(fmt::format("{}: row group {}, sample {}, table {}: id {} outside model.tables[{}] ({}).rows "
                                    "= {}",
                                    path, g, group.first_sample + i, t, *bad, t, model.tables[st].name, rows));
      }
    } catch (const DataError& e) {
      report.failures.emplace_back(e.what());
    }
    at.groups_done = g + 1;
    at.bytes_done += file.group_bytes(g);
    if (progress) progress(at);
  }
  return report;
}

}  // namespace hetrec::data::data
