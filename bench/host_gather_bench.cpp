// How fast the GPU gathers embedding rows from a table in page-locked host memory, as a
// function of the table's size: the engine's own lookup kernel (kernels::
// embedding_bag_forward) on one table whose rows live in mapped host memory (as
// `host_tables` places them), against the same table in device memory. The planner's
// step model prices a host table's distinct rows at the host link's bandwidth times a
// fitted factor; this measures whether that rate depends on how much host memory the
// table spans.
//
//   build/cuda/bench/host_gather_bench --spans-gb 0.5,1,2,5,10,20 --ids uniform
//
// Per span: the median time of one lookup batch (one id per bag, --lookups ids), the
// distinct rows the batch touches (counted exactly on the host), and the rate at which
// those distinct rows cross the link (distinct rows x row bytes / time). Writes one
// results file, bench/results/host-gather-<date>[-<tag>].json.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "core/rng.h"
#include "core/utc_time.h"
#include "data/zipf.h"
#include "gpu/device.h"
#include "gpu/device_buffer.h"
#include "gpu/memory.h"
#include "gpu/stream.h"
#include "tunable/embedding_forward/embedding_bag_forward.h"
#include "tune/gpu/median_launch_time.h"

using namespace hetrec;

namespace {

// Id batches in rotation, so that no timed batch finds the previous one's rows in L2.
constexpr int kBatchesInRotation = 4;
// Odd multiplier that spreads Zipf ranks over the table's rows (a bijection whenever it
// shares no factor with the row count, which is checked), as the synthetic data permutes
// its ranks: the hottest rows are not adjacent.
constexpr uint64_t kRankScatter = 0x9E3779B97F4A7C15ull;
constexpr double kBytesPerGb = 1e9;

std::vector<double> parse_list(const std::string& text) {
  std::vector<double> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    std::size_t used = 0;
    const double v = std::stod(item, &used);
    if (used != item.size() || !(v > 0.0)) throw ConfigError("--spans-gb: '" + item + "' is not a positive number");
    out.push_back(v);
  }
  if (out.empty()) throw ConfigError("--spans-gb: no spans given");
  return out;
}

uint64_t gcd(uint64_t a, uint64_t b) { return b == 0 ? a : gcd(b, a % b); }

// `count` ids of a `rows`-row table: uniform, or Zipf ranks scattered over the rows.
std::vector<int32_t> draw_ids(int64_t rows, int64_t count, double zipf_exponent, uint64_t seed) {
  std::vector<int32_t> ids(static_cast<std::size_t>(count));
  Rng rng(seed);
  if (zipf_exponent <= 0.0) {
    for (int32_t& id : ids) id = static_cast<int32_t>(rng.next_u64() % static_cast<uint64_t>(rows));
    return ids;
  }
  uint64_t scatter = kRankScatter % static_cast<uint64_t>(rows);
  while (gcd(scatter, static_cast<uint64_t>(rows)) != 1) ++scatter;
  const ZipfSampler zipf(rows, zipf_exponent);
  for (int32_t& id : ids) {
    // rank and scatter are below rows < 2^31: their product fits in 64 bits.
    const auto rank = static_cast<uint64_t>(zipf(rng));
    id = static_cast<int32_t>((rank * scatter) % static_cast<uint64_t>(rows));
  }
  return ids;
}

int64_t distinct(std::vector<int32_t> ids) {
  std::sort(ids.begin(), ids.end());
  return std::unique(ids.begin(), ids.end()) - ids.begin();
}

struct Placement {
  const char* name;
  bool host;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Embedding row gathers from page-locked host memory against table size"};
  std::string spans_text = "0.5,1,2,5,10,20", ids_law = "uniform", dtype_name_text = "bf16", json_out, commit = "unknown",
              tag;
  int dim = 128, reps = 20;
  int64_t lookups = 131072;
  bool device_baseline = true;
  app.add_option("--spans-gb", spans_text, "table sizes to measure, in GB (10^9 bytes), comma-separated");
  app.add_option("--ids", ids_law, "id law: uniform or zipf:S");
  app.add_option("--dtype", dtype_name_text, "row type: fp32, fp16 or bf16");
  app.add_option("--dim", dim, "row width");
  app.add_option("--lookups", lookups, "ids per batch (one id per bag)");
  app.add_option("--reps", reps, "timed batches per span");
  app.add_option("--device-baseline", device_baseline, "also time each table in device memory");
  app.add_option("--json-out", json_out, "results file (default bench/results/host-gather-<date>[-<tag>].json)");
  app.add_option("--commit", commit, "commit the binary was built from");
  app.add_option("--tag", tag, "suffix of the default results file name");
  CLI11_PARSE(app, argc, argv);
  try {
    if (!gpu::has_device()) throw DeviceError("host_gather_bench needs a GPU");
    const std::vector<double> spans = parse_list(spans_text);
    double zipf_exponent = 0.0;
    if (ids_law.rfind("zipf:", 0) == 0) zipf_exponent = std::stod(ids_law.substr(5));
    else if (ids_law != "uniform") throw ConfigError("--ids: expected uniform or zipf:S, got '" + ids_law + "'");
    const DType row_dtype = parse_dtype(dtype_name_text, "--dtype");
    if (row_dtype != DType::f32 && row_dtype != DType::f16 && row_dtype != DType::bf16)
      throw ConfigError("--dtype: expected fp32, fp16 or bf16");
    if (dim <= 0 || lookups <= 0 || reps <= 0) throw ConfigError("--dim, --lookups and --reps must be > 0");
    const double row_bytes = static_cast<double>(dim) * static_cast<double>(dtype_size(row_dtype));

    gpu::set_device(0);
    const gpu::DeviceProperties props = gpu::device_properties(0);
    gpu::Stream stream;
    // Bags of one id: offsets 0..lookups, pooled fp32 output, one sum-pooled table.
    std::vector<int32_t> offsets(static_cast<std::size_t>(lookups) + 1);
    std::iota(offsets.begin(), offsets.end(), 0);
    gpu::DeviceBuffer d_offsets(offsets.size() * sizeof(int32_t));
    gpu::memcpy_sync(d_offsets.get(), offsets.data(), offsets.size() * sizeof(int32_t), gpu::CopyKind::host_to_device);
    gpu::DeviceBuffer d_out(static_cast<std::size_t>(lookups) * static_cast<std::size_t>(dim) * sizeof(float));
    const uint8_t sum_pooling = 0;
    gpu::DeviceBuffer d_mean(1);
    gpu::memcpy_sync(d_mean.get(), &sum_pooling, 1, gpu::CopyKind::host_to_device);
    gpu::DeviceBuffer d_row_offsets(2 * sizeof(int64_t));
    gpu::DeviceBuffer d_ids(static_cast<std::size_t>(kBatchesInRotation * lookups) * sizeof(int32_t));
    gpu::DeviceBuffer d_bad(sizeof(int32_t));

    nlohmann::json rows_json = nlohmann::json::array();
    std::printf("%-9s %-7s %12s %10s %14s %12s\n", "span GB", "memory", "rows", "batch us", "distinct rows",
                "distinct GB/s");
    for (double span_gb : spans) {
      const auto rows = static_cast<int64_t>(span_gb * kBytesPerGb / row_bytes);
      if (rows < 1 || rows > INT32_MAX) throw ConfigError("--spans-gb: " + std::to_string(span_gb) + " GB is out of range");
      const auto table_bytes = static_cast<std::size_t>(rows) * static_cast<std::size_t>(row_bytes);
      const int64_t row_offsets[2] = {0, rows};
      gpu::memcpy_sync(d_row_offsets.get(), row_offsets, sizeof row_offsets, gpu::CopyKind::host_to_device);
      std::vector<int64_t> distinct_rows;
      for (int b = 0; b < kBatchesInRotation; ++b) {
        const std::vector<int32_t> ids = draw_ids(rows, lookups, zipf_exponent, 1000 + static_cast<uint64_t>(b));
        distinct_rows.push_back(distinct(ids));
        gpu::memcpy_sync(d_ids.as<int32_t>() + b * lookups, ids.data(), ids.size() * sizeof(int32_t),
                         gpu::CopyKind::host_to_device);
      }
      const double mean_distinct =
          std::accumulate(distinct_rows.begin(), distinct_rows.end(), 0.0) / static_cast<double>(distinct_rows.size());
      for (const Placement place : {Placement{"host", true}, Placement{"device", false}}) {
        if (!place.host && !device_baseline) continue;
        // The table's contents do not change the timing; a byte pattern of small finite
        // values keeps the pooled sums finite.
        gpu::MappedHostBuffer host_table;
        gpu::DeviceBuffer device_table;
        void* weights = nullptr;
        if (place.host) {
          host_table = gpu::MappedHostBuffer(table_bytes);
          std::fill_n(static_cast<unsigned char*>(host_table.host()), table_bytes, 0x3c);
          weights = host_table.device_alias();
        } else {
          device_table = gpu::DeviceBuffer(table_bytes);
          gpu::memset_async(device_table.get(), 0x3c, table_bytes, stream.get());
          weights = device_table.get();
        }
        kernels::EmbeddingTables tables;
        tables.weights = weights;
        tables.row_offsets = d_row_offsets.as<int64_t>();
        tables.mean_pooling = d_mean.as<uint8_t>();
        tables.num_tables = 1;
        tables.dim = dim;
        tables.total_rows = rows;
        tables.row_dtype = row_dtype;
        const kernels::PooledView out{d_out.get(), dim, DType::f32};
        const double us = tune::median_launch_us(stream, reps, [&](int i) {
          const int b = (i + kBatchesInRotation) % kBatchesInRotation;
          const kernels::DeviceBags bags{d_offsets.as<int32_t>(), d_ids.as<int32_t>() + b * lookups, lookups, lookups};
          kernels::embedding_bag_forward(tables, bags, out, d_bad.as<int32_t>(), stream.get());
        });
        const double gbs = mean_distinct * row_bytes / (us * 1e-6) / kBytesPerGb;
        std::printf("%-9.2f %-7s %12lld %10.1f %14.0f %12.2f\n", span_gb, place.name, static_cast<long long>(rows), us,
                    mean_distinct, gbs);
        std::fflush(stdout);
        rows_json.push_back({{"span_gb", span_gb},
                             {"memory", place.name},
                             {"rows", rows},
                             {"batch_us", us},
                             {"lookups", lookups},
                             {"distinct_rows", mean_distinct},
                             {"distinct_gbs", gbs},
                             {"lookup_gbs", static_cast<double>(lookups) * row_bytes / (us * 1e-6) / kBytesPerGb}});
      }
    }
    nlohmann::json doc;
    doc["benchmark"] = "host-gather";
    doc["date"] = utc_time("%Y-%m-%d");
    doc["gpu"] = props.name;
    doc["commit"] = commit;
    std::string command;
    for (int i = 0; i < argc; ++i) command += (i ? " " : "") + std::string(argv[i]);
    doc["command"] = command;
    doc["metrics"] = {{"row_dtype", dtype_name(row_dtype)}, {"dim", dim},         {"row_bytes", row_bytes},
                      {"ids", ids_law},                     {"reps", reps},       {"batches_in_rotation", kBatchesInRotation},
                      {"spans", rows_json}};
    if (json_out.empty()) json_out = "bench/results/host-gather-" + utc_time("%Y%m%d") + (tag.empty() ? "" : "-" + tag) + ".json";
    std::ofstream f(json_out);
    if (!f) throw IoError("cannot write " + json_out);
    f << doc.dump(1) << "\n";
    std::printf("wrote %s\n", json_out.c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "host_gather_bench: %s\n", e.what());
    return 1;
  }
}
