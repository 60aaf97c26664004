// The embedding backward's sort on the batch it sorts: the engine's radix sort
// (kernels/radix_sort.h) against the vendor library's (kernels/library_sort.h: CUB's
// onesweep on CUDA), on the occurrence keys of one batch of a configuration (global row
// of every id, its bag t * B + b as the value, in the batch's table-major order), with
// ids drawn as the synthetic data draws them (Zipf ranks scattered over each table by a
// keyed permutation, data/synthetic.cpp) and, as a second case, uniformly.
//
//   build/cuda/bench/sort_bench --out bench/results/sort-<date>-h200.json --commit <hash>
//
// Per case and sort: the median of --reps device-event timings of one sort (after
// warm-up; the input is restored before each, outside the timing), the two sorts'
// outputs compared pair by pair, and the traffic floor of the fused embedding backward
// (docs/architecture.md): the sort's passes, one read of each occurrence's pooled gradient and
// one read-modify-write of each touched row and its optimizer state, at --bandwidth-tbps.
// --keys-only draws the keys and prints the floor without a device.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "core/rng.h"
#include "core/utc_time.h"
#include "data/permutation.h"
#include "data/zipf.h"
#include "gpu/device.h"
#include "gpu/device_buffer.h"
#include "gpu/event.h"
#include "gpu/memory.h"
#include "gpu/stream.h"
#include "kernels/embedding_backward_geometry.h"
#include "kernels/radix_sort_geometry.h"
#include "kernels/sort_pairs.h"
#include "optim/sparse_update.h"
#include "train/config.h"

using namespace hetrec;

namespace {

// Bytes each pass of an LSD radix sort of (uint32 key, uint32 value) pairs moves per pair
// at least: the pair read and written once. Plus one read of the keys for the digit
// counts of every pass (CUB's onesweep takes them all in one sweep).
constexpr double kPassBytesPerPair = 16.0;
constexpr double kHistogramBytesPerPair = 4.0;
constexpr int kWarmup = 2;

struct Batch {
  std::vector<uint32_t> keys, values;
  int64_t unique_rows = 0;
};

// One batch's occurrence keys: table t's ids of bag (t, b), bag after bag, each id the
// row_offsets[t] + local row. zipf_exponent 0: uniform rows.
Batch draw_batch(const ModelConfig& model, int64_t batch, double zipf_exponent, uint64_t seed) {
  Batch out;
  int64_t total_rows = 0, per_sample = 0;
  for (const TableConfig& t : model.tables) {
    total_rows += t.rows;
    per_sample += t.hotness;
  }
  out.keys.reserve(static_cast<std::size_t>(batch * per_sample));
  out.values.reserve(out.keys.capacity());
  std::vector<bool> touched(static_cast<std::size_t>(total_rows), false);
  int64_t first_row = 0;
  for (int t = 0; t < model.num_tables(); ++t) {
    const TableConfig& table = model.tables[static_cast<std::size_t>(t)];
    const ZipfSampler zipf(table.rows, zipf_exponent);
    const IndexPermutation scatter(static_cast<uint64_t>(table.rows), hash_combine(seed, static_cast<uint64_t>(t)));
    Rng rng(seed, static_cast<uint64_t>(t) + 1);
    for (int64_t b = 0; b < batch; ++b) {
      for (int k = 0; k < table.hotness; ++k) {
        const auto row = static_cast<int64_t>(scatter(static_cast<uint64_t>(zipf(rng)))) + first_row;
        out.keys.push_back(static_cast<uint32_t>(row));
        out.values.push_back(static_cast<uint32_t>(t * batch + b));
        if (!touched[static_cast<std::size_t>(row)]) {
          touched[static_cast<std::size_t>(row)] = true;
          ++out.unique_rows;
        }
      }
    }
    first_row += table.rows;
  }
  return out;
}

struct Floor {
  double sort_bytes, grad_bytes, row_bytes;
  double total() const { return sort_bytes + grad_bytes + row_bytes; }
};

// The fused backward's traffic floor for n occurrences of `unique_rows` rows.
Floor backward_floor(int64_t n, int64_t unique_rows, int passes, const ModelConfig& model, const OptimConfig& optim) {
  const double dim = model.embedding_dim;
  const double state = static_cast<double>(sparse_state_per_row(optim.sparse, model.embedding_dim)) * sizeof(float);
  Floor f{};
  f.sort_bytes = static_cast<double>(n) * (passes * kPassBytesPerPair + kHistogramBytesPerPair);
  f.grad_bytes = static_cast<double>(n) * dim * sizeof(float);
  f.row_bytes = static_cast<double>(unique_rows) * 2.0 * (dim * static_cast<double>(dtype_size(model.row_dtype)) + state);
  return f;
}

// Median milliseconds of one sort, the input restored before each.
double time_sort(kernels::SortImpl impl, const gpu::DeviceBuffer& keys0, const gpu::DeviceBuffer& values0,
                 const kernels::SortBuffers& bufs, const int32_t* count, int64_t n, int key_bits, void* ws,
                 std::size_t ws_bytes, int reps, const gpu::Stream& stream, bool& in_primary) {
  const std::size_t bytes = static_cast<std::size_t>(n) * sizeof(uint32_t);
  std::vector<double> ms;
  for (int i = -kWarmup; i < reps; ++i) {
    gpu::memcpy_async(bufs.keys, keys0.get(), bytes, gpu::CopyKind::device_to_device, stream.get());
    gpu::memcpy_async(bufs.values, values0.get(), bytes, gpu::CopyKind::device_to_device, stream.get());
    gpu::Event start, stop;
    start.record(stream.get());
    in_primary = kernels::sort_pairs(impl, bufs, count, n, key_bits, ws, ws_bytes, stream.get());
    stop.record(stream.get());
    stop.synchronize();
    if (i >= 0) ms.push_back(gpu::Event::elapsed_ms(start, stop));
  }
  std::nth_element(ms.begin(), ms.begin() + reps / 2, ms.end());
  return ms[static_cast<std::size_t>(reps / 2)];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"The embedding backward's sort: the engine's radix sort against the library's"};
  std::string config_path = "configs/dlrm_dcnv2_mlperf.toml", out_path, commit = "unknown";
  int64_t batch = 131072;
  int reps = 20;
  double bandwidth_tbps = 4.26;  // the copy bandwidth measured on the H200 (bench/results/probe-*.json)
  bool keys_only = false;
  std::vector<std::string> overrides = {"model.row_dtype=\"bf16\""};
  app.add_option("--config", config_path, "run configuration whose tables and sizes the keys follow");
  app.add_option("--batch", batch, "samples per batch");
  app.add_option("--reps", reps, "timed sorts per case and sort (the median is reported)");
  app.add_option("--bandwidth-tbps", bandwidth_tbps, "memory bandwidth of the floor, TB/s");
  app.add_option("--set", overrides, "configuration overrides (default: model.row_dtype=\"bf16\")");
  app.add_option("--out", out_path, "results file (default bench/results/sort-<date>.json)");
  app.add_option("--commit", commit, "commit the binary was built from");
  app.add_flag("--keys-only", keys_only, "draw the keys and print the floor; no device");
  CLI11_PARSE(app, argc, argv);
  try {
    if (batch <= 0 || reps <= 0 || !(bandwidth_tbps > 0.0))
      throw ConfigError("--batch, --reps and --bandwidth-tbps must be > 0");
    const RunConfig cfg = load_run_config(config_path, overrides);
    int64_t total_rows = 0;
    for (const TableConfig& t : cfg.model.tables) total_rows += t.rows;
    const int key_bits = kernels::embedding_sort_key_bits(total_rows);
    const int passes = kernels::radix_sort_passes(key_bits);
    if (!keys_only && !gpu::has_device()) throw DeviceError("sort_bench needs a GPU (or --keys-only)");

    struct Case {
      const char* name;
      double zipf;
    };
    nlohmann::json cases = nlohmann::json::array();
    std::printf("%-8s %10s %9s %5s %10s %10s %7s %12s %10s %10s\n", "ids", "keys", "unique", "bits", "engine ms",
                "library ms", "ratio", "floor GB", "floor ms", "sort floor");
    for (const Case c : {Case{"zipf", cfg.data.synthetic.zipf_exponent}, Case{"uniform", 0.0}}) {
      const Batch host = draw_batch(cfg.model, batch, c.zipf, cfg.data.synthetic.seed);
      const auto n = static_cast<int64_t>(host.keys.size());
      const Floor floor = backward_floor(n, host.unique_rows, passes, cfg.model, cfg.optim);
      const double to_ms = 1e3 / (bandwidth_tbps * 1e12);
      double engine_ms = 0.0, library_ms = 0.0;
      bool identical = true;
      if (!keys_only) {
        gpu::set_device(0);
        gpu::Stream stream;
        const std::size_t bytes = static_cast<std::size_t>(n) * sizeof(uint32_t);
        gpu::DeviceBuffer keys0(bytes), values0(bytes), k(bytes), v(bytes), k2(bytes), v2(bytes);
        gpu::memcpy_sync(keys0.get(), host.keys.data(), bytes, gpu::CopyKind::host_to_device);
        gpu::memcpy_sync(values0.get(), host.values.data(), bytes, gpu::CopyKind::host_to_device);
        const int32_t count_host = static_cast<int32_t>(n);
        gpu::DeviceBuffer count(sizeof(int32_t));
        gpu::memcpy_sync(count.get(), &count_host, sizeof count_host, gpu::CopyKind::host_to_device);
        const std::size_t ws_bytes = kernels::sort_workspace_bytes(n);
        gpu::DeviceBuffer ws(ws_bytes);
        const kernels::SortBuffers bufs{k.as<uint32_t>(), v.as<uint32_t>(), k2.as<uint32_t>(), v2.as<uint32_t>()};
        std::vector<uint32_t> result[2][2];  // [sort][keys, values]
        int s = 0;
        for (kernels::SortImpl impl : {kernels::SortImpl::engine, kernels::SortImpl::library}) {
          bool primary = true;
          const double ms = time_sort(impl, keys0, values0, bufs, count.as<int32_t>(), n, key_bits, ws.get(), ws_bytes,
                                      reps, stream, primary);
          (impl == kernels::SortImpl::engine ? engine_ms : library_ms) = ms;
          result[s][0].resize(host.keys.size());
          result[s][1].resize(host.keys.size());
          gpu::memcpy_sync(result[s][0].data(), primary ? k.get() : k2.get(), bytes, gpu::CopyKind::device_to_host);
          gpu::memcpy_sync(result[s][1].data(), primary ? v.get() : v2.get(), bytes, gpu::CopyKind::device_to_host);
          ++s;
        }
        identical = result[0][0] == result[1][0] && result[0][1] == result[1][1];
        if (!identical) throw InternalError("sort_bench: the engine's and the library's sorts differ on case " +
                                            std::string(c.name));
      }
      const double ratio = library_ms > 0.0 ? engine_ms / library_ms : 0.0;
      std::printf("%-8s %10lld %9lld %5d %10.3f %10.3f %7.2f %12.3f %10.3f %10.3f\n", c.name,
                  static_cast<long long>(n), static_cast<long long>(host.unique_rows), key_bits, engine_ms, library_ms,
                  ratio, floor.total() * 1e-9, floor.total() * to_ms, floor.sort_bytes * to_ms);
      std::fflush(stdout);
      cases.push_back({{"ids", c.name},
                       {"zipf_exponent", c.zipf},
                       {"keys", n},
                       {"unique_rows", host.unique_rows},
                       {"key_bits", key_bits},
                       {"passes", passes},
                       {"engine_ms", engine_ms},
                       {"library_ms", library_ms},
                       {"ratio", ratio},
                       {"identical", identical},
                       {"floor_sort_bytes", floor.sort_bytes},
                       {"floor_grad_bytes", floor.grad_bytes},
                       {"floor_row_bytes", floor.row_bytes},
                       {"floor_bytes", floor.total()},
                       {"floor_sort_ms", floor.sort_bytes * to_ms},
                       {"floor_ms", floor.total() * to_ms}});
    }
    if (keys_only) return 0;
    nlohmann::json doc;
    doc["benchmark"] = "sort";
    doc["what"] = "the embedding backward's occurrence sort, engine radix sort against the library's (CUB onesweep)";
    doc["date"] = utc_time("%Y-%m-%d");
    doc["gpu"] = gpu::device_properties(0).name;
    doc["commit"] = commit;
    std::string command;
    for (int i = 0; i < argc; ++i) command += (i ? " " : "") + std::string(argv[i]);
    doc["command"] = command;
    doc["baseline"] = "engine";
    // The headline: the MLPerf-like (Zipf) case, the first.
    doc["ratio"] = cases[0]["ratio"];
    doc["floor_bytes"] = cases[0]["floor_bytes"];
    doc["floor_ms"] = cases[0]["floor_ms"];
    doc["note"] = "ratio = engine_ms / library_ms (the zipf case at the top level); floor = the fused embedding "
                  "backward's traffic (the sort's passes, "
                  "each occurrence's fp32 pooled gradient read once, each touched row and its state read and written "
                  "once) at bandwidth_tbps";
    doc["metrics"] = {{"config", config_path}, {"batch", batch},  {"tables", cfg.model.num_tables()},
                      {"total_rows", total_rows}, {"dim", cfg.model.embedding_dim},
                      {"row_dtype", dtype_name(cfg.model.row_dtype)}, {"reps", reps},
                      {"bandwidth_tbps", bandwidth_tbps}, {"cases", cases}};
    if (out_path.empty()) out_path = "bench/results/sort-" + utc_time("%Y%m%d") + ".json";
    std::ofstream f(out_path);
    if (!f) throw IoError("cannot write " + out_path);
    f << doc.dump(1) << "\n";
    std::printf("wrote %s\n", out_path.c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sort_bench: %s\n", e.what());
    return 1;
  }
}
