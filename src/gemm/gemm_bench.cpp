#include "gemm/gemm_bench.h"

#include "core/error.h"
#include "core/exclusive_file.h"
#include "core/utc_time.h"

// CUDA only: hipBLASLt cannot enumerate configurations (gemm/cublaslt_algos.h).
#if defined(HETREC_WITH_CUDA)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <fstream>
#include <map>
#include <numeric>
#include <nlohmann/json.hpp>
#include <regex>
#include <vector>

#include "gemm/cublaslt_algos.h"
#include "gemm/cublaslt_gemm.h"
#include "gemm/random_pool.h"
#include "gpu/device.h"
#include "gpu/device_buffer.h"
#include "gpu/event.h"
#include "gpu/memory.h"
#include "gpu/stream.h"
#include "kernels/output_compare.h"
#include "kernels/stream_gate.h"
#include "gemm_perf/gemm_corpus.h"
#include "gemm_perf/gemm_oracle.h"
#include "gemm_perf/gemm_suite.h"

namespace hetrec::inline gemm {

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// The engine's cuBLASLt workspace (cublaslt::Gemm::kDefaultWorkspaceBytes): a configuration
// needing more could not run in training, so it is not timed.
constexpr std::size_t kWorkspaceBytes = cublaslt::Gemm::kDefaultWorkspaceBytes;
// Operands rotate over copies whose total is at least this many times the L2, so no launch
// finds its operands in the L2 from the previous one.
constexpr std::size_t kRotationL2Multiple = 2;
constexpr int kMinCopies = 2;
constexpr std::size_t kAlign = 256;  // every operand starts 256-byte aligned (cuBLASLt's widest)
constexpr uint64_t kSeed = 0x6f7261636c65;  // "oracle": the operand pools' random values
constexpr int kMinLaunches = 20;
// Results are rewritten at most this often during a run, so a run killed from outside
// still leaves what it measured.
constexpr double kCheckpointSeconds = 20.0;
// The fp8 per-tensor scales: not 1, so a kernel that ignores them fails verification.
constexpr float kFp8ScaleA = 0.5f, kFp8ScaleB = 2.0f;
constexpr std::size_t kScaleSlot = cublaslt::kScaleAlignment / sizeof(float);  // floats per scale slot

// With a time budget, a shape stops timing candidates once its share of the remaining time
// is spent, but never before this many (when it has them).
constexpr std::size_t kMinCandidatesPerShape = 4;
// The spread order's stride as a fraction of the list (the golden ratio's conjugate, which
// spreads any prefix of i * stride mod n evenly over the list).
constexpr double kSpreadFraction = 0.6180339887;

std::size_t aligned(std::size_t b) { return (b + kAlign - 1) / kAlign * kAlign; }

// Relative max error (max |x - ref| / max |ref|) allowed between a candidate and the
// heuristic: both round the same products, in different orders (split-K partials in the
// output type for 16-bit outputs), so a few output ulps; a wrong kernel is off by O(1).
double tolerance(const std::string& precision) {
  if (precision == "fp32") return 1e-4;
  if (precision == "tf32") return 1e-2;
  if (precision == "fp16") return 2e-2;
  return 5e-2;  // bf16 outputs (bf16, fp8)
}

cublaslt::Precision precision_of(const std::string& p) {
  if (p == "fp32") return cublaslt::Precision::fp32;
  if (p == "tf32") return cublaslt::Precision::tf32;
  if (p == "bf16") return cublaslt::Precision::bf16;
  if (p == "fp16") return cublaslt::Precision::fp16;
  if (p == "fp8") return cublaslt::Precision::fp8_e4m3;
  throw InternalError("gemm bench: unknown precision " + p);
}

cublaslt::Epilogue epilogue_of(const std::string& e) {
  if (e == "none") return cublaslt::Epilogue::none;
  if (e == "bias") return cublaslt::Epilogue::bias;
  if (e == "relu_bias") return cublaslt::Epilogue::relu_bias;
  throw InternalError("gemm bench: unknown epilogue " + e);
}

struct ShapeBytes {
  std::size_t a = 0, b = 0, d = 0;
  int copies = kMinCopies;
};

// 0..n-1 in an order whose every prefix is spread evenly over the list (i * stride mod n
// with stride coprime to n), so a run that times only a prefix still samples every algorithm,
// tile and variant region of the enumeration.
std::vector<std::size_t> spread_order(std::size_t n) {
  std::vector<std::size_t> order;
  if (n == 0) return order;
  std::size_t stride = std::max<std::size_t>(1, static_cast<std::size_t>(kSpreadFraction * static_cast<double>(n)));
  while (std::gcd(stride, n) != 1) ++stride;
  for (std::size_t i = 0; i < n; ++i) order.push_back(i * stride % n);
  return order;
}

ShapeBytes shape_bytes(const GemmSuiteShape& s, std::size_t rotation_bytes) {
  const std::size_t in = dtype_size(cublaslt::operand_dtype(precision_of(s.precision)));
  ShapeBytes sb;
  sb.a = aligned(static_cast<std::size_t>(s.m * s.k) * in);
  sb.b = aligned(static_cast<std::size_t>(s.k * s.n) * in);
  sb.d = aligned(static_cast<std::size_t>(s.m * s.n) * dtype_size(s.d_type));
  const std::size_t set = sb.a + sb.b + sb.d;
  sb.copies = std::max<int>(kMinCopies, static_cast<int>((rotation_bytes + set - 1) / set));
  return sb;
}

std::string version_text(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

void write_json_atomically(const json& j, const std::string& path) {
  try {
    write_file_atomically(path, j.dump() + "\n");  // core/exclusive_file.h
  } catch (const IoError& e) {
    throw IoError(std::string("cannot write GEMM oracle results: ") + e.what());
  }
}

struct Timing {
  double median_us = 0, min_us = 0;
};

class Bench {
 public:
  explicit Bench(const GemmBenchOptions& o) : opt_(o), events_(2 * static_cast<std::size_t>(o.launches)) {
    HETREC_BLAS_CHECK(cublasLtCreate(&handle_));
    workspace_ = gpu::DeviceBuffer(kWorkspaceBytes);
    compare_ = gpu::DeviceBuffer(sizeof(kernels::CompareResult));
    // Each scale in its own aligned slot (cuBLASLt refuses unaligned scales at launch).
    float scales[2 * kScaleSlot] = {};
    scales[0] = kFp8ScaleA;
    scales[kScaleSlot] = kFp8ScaleB;
    scales_ = gpu::DeviceBuffer(sizeof(scales));
    gpu::memcpy_sync(scales_.get(), scales, sizeof(scales), gpu::CopyKind::host_to_device);
  }
  ~Bench() { (void)cublasLtDestroy(handle_); }
  Bench(const Bench&) = delete;
  Bench& operator=(const Bench&) = delete;

  void run();

 private:
  struct Buffers {
    const uint8_t* a = nullptr;  // copy 0; copy r at + r * stride
    const uint8_t* b = nullptr;
    uint8_t* d = nullptr;
    std::size_t in_stride = 0, d_stride = 0;
    int copies = 0;
  };

  cublasStatus_t launch(const cublaslt::MatmulDescriptors& desc, const cublasLtMatmulAlgo_t& algo, const Buffers& buf,
                        int copy);
  std::optional<Timing> time_algo(const cublaslt::MatmulDescriptors& desc, const cublasLtMatmulAlgo_t& algo,
                                  const Buffers& buf);
  // allowance_s: seconds this shape may spend timing candidates (0: no limit).
  json bench_shape(const GemmSuiteShape& s, const ShapeBytes& sb, double allowance_s, std::string& progress);

  const GemmBenchOptions& opt_;
  cublasLtHandle_t handle_ = nullptr;
  gpu::Stream stream_;
  std::vector<gpu::Event> events_;
  kernels::StreamGate gate_;
  std::size_t ungated_candidates_ = 0;  // timed as enqueued: the gate opened itself
  gpu::DeviceBuffer workspace_, compare_, scales_, out_pool_, ref_;
  std::map<DType, gpu::DeviceBuffer> bias_pools_;  // a bias of each output type (f32, bf16, f16)
  std::map<DType, gpu::DeviceBuffer> in_pools_;
};

cublasStatus_t Bench::launch(const cublaslt::MatmulDescriptors& desc, const cublasLtMatmulAlgo_t& algo,
                             const Buffers& buf, int copy) {
  const std::size_t r = static_cast<std::size_t>(copy % buf.copies);
  const float alpha = 1.0f, beta = 0.0f;
  // Column-major A is our B and column-major B our A (gemm/cublaslt_gemm.h).
  return cublasLtMatmul(handle_, desc.desc, &alpha, buf.b + r * buf.in_stride, desc.a, buf.a + r * buf.in_stride,
                        desc.b, &beta, buf.d + r * buf.d_stride, desc.d, buf.d + r * buf.d_stride, desc.d, &algo,
                        workspace_.get(), workspace_.bytes(), stream_.get());
}

std::optional<Timing> Bench::time_algo(const cublaslt::MatmulDescriptors& desc, const cublasLtMatmulAlgo_t& algo,
                                       const Buffers& buf) {
  int copy = 1;  // copy 0 was just used by the verification run
  for (int i = 0; i < opt_.warmup; ++i)
    if (launch(desc, algo, buf, copy++) != CUBLAS_STATUS_SUCCESS) return std::nullopt;
  // The timed launches wait behind a closed gate until all are enqueued, then run back to
  // back: a launch's time is the device's, not the host's enqueue of the next one.
  for (int attempt = 0; attempt < 2; ++attempt) {
    const bool gated = attempt == 0;
    stream_.synchronize();
    if (gated) gate_.close(stream_.get());
    bool failed = false;
    for (int i = 0; i < opt_.launches && !failed; ++i) {
      events_[2 * static_cast<std::size_t>(i)].record(stream_.get());
      failed = launch(desc, algo, buf, copy++) != CUBLAS_STATUS_SUCCESS;
      events_[2 * static_cast<std::size_t>(i) + 1].record(stream_.get());
    }
    if (gated) gate_.open();
    stream_.synchronize();
    if (failed) return std::nullopt;
    // The gate opened itself: the library waited on the device inside a launch. Time this
    // configuration as it is enqueued instead, and count it.
    if (gated && gate_.expired()) {
      ++ungated_candidates_;
      continue;
    }
    break;
  }
  std::vector<double> us(static_cast<std::size_t>(opt_.launches));
  for (std::size_t i = 0; i < us.size(); ++i)
    us[i] = 1000.0 * gpu::Event::elapsed_ms(events_[2 * i], events_[2 * i + 1]);
  std::sort(us.begin(), us.end());
  const std::size_t n = us.size();
  return Timing{n % 2 ? us[n / 2] : 0.5 * (us[n / 2 - 1] + us[n / 2]), us.front()};
}

// Times rounded to 1 ns and errors to 3 significant digits keep the file short.
double round_us(double us) { return std::round(us * 1000.0) / 1000.0; }
double round_error(double e) {
  if (!(e > 0) || !std::isfinite(e)) return e;
  const double scale = std::pow(10.0, std::floor(std::log10(e)) - 2);
  return std::round(e / scale) * scale;
}

// One row in the order of kOracleCandidateColumns (gemm_perf/gemm_oracle.h).
json candidate_row(const cublaslt::EnumeratedAlgo& e, const Timing& t, double err) {
  const auto& c = e.config;
  const GemmConfig g = cublaslt::gemm_config_of(c);
  return json::array({c.algo_id, c.tile_id, c.stages_id, c.split_k, c.reduction, c.swizzle, c.cluster_id,
                      c.custom_option, e.workspace, round_us(t.median_us), round_us(t.min_us), round_error(err),
                      g.tile_m, g.tile_n, g.tile_k, g.stages, g.cluster_m, g.cluster_n, g.swizzle});
}

json Bench::bench_shape(const GemmSuiteShape& s, const ShapeBytes& sb, double allowance_s, std::string& progress) {
  const auto shape_start = Clock::now();
  cublaslt::Problem p;
  p.m = s.m;
  p.n = s.n;
  p.k = s.k;
  p.trans_a = s.trans_a;
  p.trans_b = s.trans_b;
  p.lda = s.trans_a ? s.m : s.k;
  p.ldb = s.trans_b ? s.k : s.n;
  p.ldd = s.n;
  p.d_type = s.d_type;
  p.precision = precision_of(s.precision);
  p.epilogue = epilogue_of(s.epilogue);
  // A 16-bit output takes a bias of its own type, as the engine's 16-bit layers pass it
  // (cuBLASLt fuses an fp32 bias into a 16-bit D for few shapes).
  if (p.d_type != DType::f32 && p.precision != cublaslt::Precision::fp8_e4m3) p.bias_type = p.d_type;
  const auto desc = cublaslt::make_descriptors(p);
  cublaslt::Operands o;
  o.bias = bias_pools_.at(p.bias_type).get();
  o.a_scale = scales_.as<float>();
  o.b_scale = scales_.as<float>() + kScaleSlot;
  cublaslt::set_operand_pointers(p, o, desc->desc);

  Buffers buf;
  const gpu::DeviceBuffer& in = in_pools_.at(cublaslt::operand_dtype(p.precision));
  buf.in_stride = sb.a + sb.b;
  buf.a = in.as<uint8_t>();
  buf.b = in.as<uint8_t>() + sb.a;
  buf.d = out_pool_.as<uint8_t>();
  buf.d_stride = sb.d;
  buf.copies = sb.copies;

  json j{{"id", s.id},          {"family", s.model}, {"m", s.m},
         {"n", s.n},            {"k", s.k},
         {"trans_a", s.trans_a}, {"trans_b", s.trans_b},
         {"precision", s.precision}, {"epilogue", s.epilogue},
         {"d_type", std::string(dtype_name(s.d_type))}, {"copies", sb.copies}};

  const auto heuristic = cublaslt::select_algo(handle_, desc->desc, desc->a, desc->b, desc->d, kWorkspaceBytes,
                                               cublaslt::Alignment{}, s.d_type != DType::f32);
  if (!heuristic) {
    j["skipped"] = "cuBLASLt's heuristic has no algorithm for this shape";
    progress = "skipped (no heuristic algorithm)";
    return j;
  }
  // The heuristic's first choices in its order, and what asking for them costs the CPU:
  // the list a selector that ranks only the heuristic's choices would rank.
  const auto list_start = Clock::now();
  const std::vector<cublasLtMatmulAlgo_t> heuristic_list =
      cublaslt::heuristic_algos(handle_, desc->desc, desc->a, desc->b, desc->d, kWorkspaceBytes, cublaslt::Alignment{},
                                s.d_type != DType::f32, cublaslt::kHeuristicConfigs);
  const double heuristic_list_us = std::chrono::duration<double, std::micro>(Clock::now() - list_start).count();
  json heuristic_keys = json::array();
  for (const cublasLtMatmulAlgo_t& algo : heuristic_list)
    heuristic_keys.push_back(cublaslt::algo_key(cublaslt::read_algo_config(algo)));
  const auto enumerate_start = Clock::now();
  auto enumeration = cublaslt::enumerate_algos(handle_, p, *desc, kWorkspaceBytes);
  const double enumerate_ms = std::chrono::duration<double, std::milli>(Clock::now() - enumerate_start).count();
  const cublaslt::AlgoConfig heuristic_config = cublaslt::read_algo_config(*heuristic);
  const bool heuristic_enumerated = cublaslt::find_config(enumeration.valid, heuristic_config).has_value();
  // The heuristic's further choices, which may lie outside the enumeration's bounds.
  const std::size_t heuristic_extra =
      cublaslt::add_heuristic_configs(handle_, *desc, kWorkspaceBytes, heuristic_list, enumeration);
  auto heuristic_index = cublaslt::find_config(enumeration.valid, heuristic_config);
  std::string outside_bounds;
  if (!heuristic_enumerated) {
    // A configuration outside the enumeration's bounds: timed as a candidate too (it heads
    // the heuristic's list added above, unless that check refused it), so the results
    // always hold the heuristic's row.
    (void)cublaslt::within_enumeration_bounds(heuristic_config, enumeration, &outside_bounds);
    if (!heuristic_index)
      if (auto extra = cublaslt::check_algo(handle_, *desc, *heuristic, kWorkspaceBytes)) {
        enumeration.valid.push_back(*extra);
        heuristic_index = enumeration.valid.size() - 1;
      }
  }

  // The reference: the heuristic's output on copy 0, poisoned first.
  const std::size_t d_elems = static_cast<std::size_t>(s.m * s.n);
  const std::size_t d_bytes = d_elems * dtype_size(s.d_type);
  auto* cmp = compare_.as<kernels::CompareResult>();
  auto compare_with_ref = [&]() {
    kernels::compare_outputs(s.d_type, buf.d, ref_.get(), static_cast<int64_t>(d_elems), cmp, stream_.get());
    kernels::CompareResult r{};
    gpu::memcpy_async(&r, cmp, sizeof r, gpu::CopyKind::device_to_host, stream_.get());
    stream_.synchronize();
    return r;
  };
  gpu::memset_async(buf.d, 0xFF, d_bytes, stream_.get());
  if (launch(*desc, *heuristic, buf, 0) != CUBLAS_STATUS_SUCCESS) {
    j["skipped"] = "the heuristic's algorithm failed to launch";
    progress = "skipped (heuristic launch failed)";
    return j;
  }
  gpu::memcpy_async(ref_.get(), buf.d, d_bytes, gpu::CopyKind::device_to_device, stream_.get());
  const kernels::CompareResult self = compare_with_ref();
  if (self.nonfinite != 0) {
    j["skipped"] = "the heuristic's output has " + std::to_string(self.nonfinite) + " non-finite values";
    progress = "skipped (heuristic output not finite)";
    return j;
  }
  const auto heuristic_timing = time_algo(*desc, *heuristic, buf);
  if (!heuristic_timing) {
    j["skipped"] = "the heuristic's algorithm failed during timing";
    progress = "skipped (heuristic timing failed)";
    return j;
  }
  // Each returned algorithm timed as the struct the library returned (a configuration rebuilt
  // from its attributes may run another kernel), with its rank in the list.
  json returned = json::array();
  for (std::size_t rank = 0; rank < heuristic_list.size(); ++rank) {
    const cublasLtMatmulAlgo_t& algo = heuristic_list[rank];
    const auto checked = cublaslt::check_algo(handle_, *desc, algo, kWorkspaceBytes);
    if (!checked) continue;
    gpu::memset_async(buf.d, 0xFF, d_bytes, stream_.get());
    if (launch(*desc, algo, buf, 0) != CUBLAS_STATUS_SUCCESS) continue;
    const kernels::CompareResult r = compare_with_ref();
    const double err = r.max_abs_ref > 0 ? r.max_abs_diff / r.max_abs_ref : r.max_abs_diff;
    if (r.nonfinite != 0 || !(err <= tolerance(s.precision))) continue;
    const auto t = rank == 0 && cublaslt::read_algo_config(algo) == heuristic_config ? heuristic_timing
                                                                                    : time_algo(*desc, algo, buf);
    if (!t) continue;
    cublaslt::EnumeratedAlgo as_returned = *checked;
    as_returned.algo = algo;
    returned.push_back(json{{"rank", rank}, {"row", candidate_row(as_returned, *t, err)}});
  }
  j["heuristic"] = json{{"key", cublaslt::algo_key(heuristic_config)},
                        {"returned", std::move(returned)},
                        {"enumerated", heuristic_enumerated},
                        {"outside_bounds", outside_bounds},
                        {"index", -1},
                        {"median_us", round_us(heuristic_timing->median_us)},
                        {"min_us", round_us(heuristic_timing->min_us)},
                        {"config", to_string(cublaslt::gemm_config_of(heuristic_config))},
                        {"listed", std::move(heuristic_keys)},
                        {"list_query_us", heuristic_list_us}};

  // Timing order: the heuristic's equal first, then the rest of its list (so a record cut
  // short still times every configuration the heuristic offers), then the spread order; a
  // cap or the shape's time allowance ends the list early.
  const std::size_t valid = enumeration.valid.size();
  std::vector<std::size_t> order;
  std::vector<bool> queued(valid, false);
  const auto queue = [&](std::size_t i) {
    if (!queued[i]) queued[i] = true, order.push_back(i);
  };
  if (heuristic_index) queue(*heuristic_index);
  for (const cublasLtMatmulAlgo_t& algo : heuristic_list)
    if (const auto i = cublaslt::find_config(enumeration.valid, cublaslt::read_algo_config(algo))) queue(*i);
  for (const std::size_t i : spread_order(valid)) queue(i);
  const auto cap = static_cast<std::size_t>(opt_.max_candidates_per_shape);

  json candidates = json::array(), rejected = json::array();
  const double tol = tolerance(s.precision);
  double best = INFINITY;
  std::size_t attempted = 0;
  for (const std::size_t i : order) {
    if (cap > 0 && attempted >= cap) break;
    if (allowance_s > 0 && attempted >= kMinCandidatesPerShape &&
        std::chrono::duration<double>(Clock::now() - shape_start).count() > allowance_s)
      break;
    ++attempted;
    const auto& e = enumeration.valid[i];
    gpu::memset_async(buf.d, 0xFF, d_bytes, stream_.get());
    const cublasStatus_t status = launch(*desc, e.algo, buf, 0);
    if (status != CUBLAS_STATUS_SUCCESS) {
      rejected.push_back({{"key", cublaslt::algo_key(e.config)},
                          {"reason", "launch failed: " + gpu::blas_status_text(status)},
                          {"max_err", 0.0}});
      continue;
    }
    const kernels::CompareResult r = compare_with_ref();
    const double err = r.max_abs_ref > 0 ? r.max_abs_diff / r.max_abs_ref : r.max_abs_diff;
    if (r.nonfinite != 0 || !(err <= tol)) {
      rejected.push_back({{"key", cublaslt::algo_key(e.config)},
                          {"reason", r.nonfinite != 0 ? "non-finite output (" + std::to_string(r.nonfinite) + ")"
                                                      : std::string("mismatch")},
                          {"max_err", r.nonfinite != 0 ? -1.0 : round_error(err)}});
      continue;
    }
    const auto t = time_algo(*desc, e.algo, buf);
    if (!t) {
      rejected.push_back({{"key", cublaslt::algo_key(e.config)}, {"reason", "launch failed during timing"}, {"max_err", round_error(err)}});
      continue;
    }
    if (heuristic_index && i == *heuristic_index) j["heuristic"]["index"] = candidates.size();
    candidates.push_back(candidate_row(e, *t, err));
    best = std::min(best, t->median_us);
  }
  j["enumeration"] = json{{"algo_ids", enumeration.algo_ids},
                          {"checked", enumeration.checked},
                          {"valid", valid},
                         {"heuristic_listed", heuristic_extra},
                          {"over_workspace", enumeration.over_workspace},
                          {"enumerate_ms", enumerate_ms},
                          {"attempted", attempted},
                          {"timed", candidates.size()}};
  j["candidates"] = std::move(candidates);
  j["rejected"] = std::move(rejected);
  char line[256];
  std::snprintf(line, sizeof line,
                "%d ids, %d checked in %.0f ms, %zu valid, %zu tried, %zu timed, %zu rejected; heuristic %.1f us%s, "
                "best %.1f us",
                enumeration.algo_ids, enumeration.checked, enumerate_ms, valid, attempted, j["candidates"].size(), j["rejected"].size(),
                heuristic_timing->median_us, heuristic_enumerated ? "" : " (not enumerated)", best);
  progress = line;
  return j;
}

void Bench::run() {
  const auto start = Clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  const gpu::DeviceProperties props = gpu::device_properties(gpu::current_device());
  const std::size_t rotation_bytes = kRotationL2Multiple * props.l2_cache_bytes;

  std::vector<GemmSuiteShape> shapes;
  const std::regex filter(opt_.filter.empty() ? std::string(".*") : opt_.filter, std::regex::ECMAScript);
  for (auto& s : opt_.suite == "corpus" ? gemm_corpus(opt_.families) : gemm_suite())
    if ((opt_.suite == "all" || opt_.suite == "corpus" || s.model == opt_.suite) && std::regex_search(s.id, filter))
      shapes.push_back(std::move(s));
  shapes = gemm_shard(std::move(shapes), opt_.shard_index, opt_.shard_count);
  if (shapes.empty())
    throw ConfigError("--suite '" + opt_.suite + "' with --filter '" + opt_.filter + "' and --shard " +
                      std::to_string(opt_.shard_index) + "/" + std::to_string(opt_.shard_count) +
                      " selects no shape of the suite");

  // Pools sized for the largest shape of each operand type.
  std::map<DType, std::size_t> in_bytes;
  std::size_t out_bytes = 0, ref_bytes = 0;
  int64_t max_n = 1;
  for (const auto& s : shapes) {
    const ShapeBytes sb = shape_bytes(s, rotation_bytes);
    auto& need = in_bytes[cublaslt::operand_dtype(precision_of(s.precision))];
    need = std::max(need, static_cast<std::size_t>(sb.copies) * (sb.a + sb.b));
    out_bytes = std::max(out_bytes, static_cast<std::size_t>(sb.copies) * sb.d);
    ref_bytes = std::max(ref_bytes, sb.d);
    max_n = std::max(max_n, s.n);
  }
  uint64_t pool_stream = 1;
  for (const auto& [type, bytes] : in_bytes) in_pools_.emplace(type, random_device_pool(type, bytes, kSeed, pool_stream++));
  for (const DType t : {DType::f32, DType::bf16, DType::f16})
    bias_pools_.emplace(t, random_device_pool(t, static_cast<std::size_t>(max_n) * dtype_size(t), kSeed, pool_stream++));
  out_pool_ = gpu::DeviceBuffer(out_bytes);
  ref_ = gpu::DeviceBuffer(ref_bytes);

  json results{{"schema", kGemmOracleSchema},
               {"date", utc_time("%Y-%m-%dT%H:%M:%SZ")},
               {"gpu", props.name},
               {"driver", version_text(gpu::driver_version())},
               {"cublaslt_version", std::to_string(cublasLtGetVersion())},
               {"cuda_runtime", version_text(gpu::runtime_version())},
               {"commit", std::getenv("HETREC_COMMIT") ? std::getenv("HETREC_COMMIT") : ""},
               {"command", opt_.command},
               {"suite", opt_.suite},
               {"shard", std::to_string(opt_.shard_index) + "/" + std::to_string(opt_.shard_count)},
               {"launches", opt_.launches},
               {"warmup", opt_.warmup},
               {"timing", "gated: each candidate's timed launches run back to back behind a stream gate, "
                          "one event pair per launch"},
               {"rotation_bytes", rotation_bytes},
               {"l2_bytes", props.l2_cache_bytes},
               {"max_candidates_per_shape", opt_.max_candidates_per_shape},
               {"candidate_columns", json(std::vector<std::string>(std::begin(kOracleCandidateColumns),
                                                                   std::end(kOracleCandidateColumns)))},
               {"shapes", json::array()}};
  std::fprintf(stderr, "gemm bench: %zu shapes on %s (L2 %.0f MB, operands rotate over >= %.0f MB)\n", shapes.size(),
               props.name.c_str(), props.l2_cache_bytes / 1e6, rotation_bytes / 1e6);
  double last_write = 0;
  std::size_t done = 0;
  for (const auto& s : shapes) {
    if (opt_.time_budget_s > 0 && elapsed() > opt_.time_budget_s) {
      std::fprintf(stderr, "gemm bench: time budget of %.0f s spent; %zu of %zu shapes not run\n", opt_.time_budget_s,
                   shapes.size() - done, shapes.size());
      break;
    }
    // Each shape's share of the time left (shapes finishing early leave more to the rest).
    const double allowance =
        opt_.time_budget_s > 0 ? (opt_.time_budget_s - elapsed()) / static_cast<double>(shapes.size() - done) : 0.0;
    std::string progress;
    try {
      results["shapes"].push_back(bench_shape(s, shape_bytes(s, rotation_bytes), allowance, progress));
    } catch (const Error& e) {
      // One shape's library or device error is recorded and the run goes on (a sticky device
      // error then marks every later shape the same way).
      results["shapes"].push_back(json{{"id", s.id}, {"m", s.m}, {"n", s.n}, {"k", s.k}, {"trans_a", s.trans_a},
                                       {"trans_b", s.trans_b}, {"precision", s.precision}, {"epilogue", s.epilogue},
                                       {"d_type", std::string(dtype_name(s.d_type))},
                                       {"skipped", std::string("error: ") + e.what()}});
      progress = std::string("error: ") + e.what();
    }
    ++done;
    std::fprintf(stderr, "[%zu/%zu] %s: %s (%.0f s)\n", done, shapes.size(), s.id.c_str(), progress.c_str(),
                 elapsed());
    if (elapsed() - last_write > kCheckpointSeconds) {
      results["complete"] = false;
      write_json_atomically(results, opt_.out);
      last_write = elapsed();
    }
  }
  results["complete"] = done == shapes.size();
  results["shapes_not_run"] = shapes.size() - done;
  results["ungated_candidates"] = ungated_candidates_;
  write_json_atomically(results, opt_.out);
  std::fprintf(stderr, "gemm bench: %zu shapes in %.0f s -> %s\n", done, elapsed(), opt_.out.c_str());
}

}  // namespace

void run_gemm_bench(const GemmBenchOptions& options) {
  if (options.launches < kMinLaunches)
    throw ConfigError("--launches must be at least " + std::to_string(kMinLaunches) + ", found " +
                      std::to_string(options.launches));
  if (options.warmup < 0) throw ConfigError("--warmup must be >= 0");
  if (options.max_candidates_per_shape < 0) throw ConfigError("--max-candidates-per-shape must be >= 0");
  if (options.out.empty()) throw ConfigError("--out is required");
  if (options.suite != "corpus" && !options.families.empty())
    throw ConfigError("--families applies to --suite corpus only, found --suite '" + options.suite + "'");
  if (options.shard_count < 1 || options.shard_index < 0 || options.shard_index >= options.shard_count)
    throw ConfigError("--shard: expected i/n with 0 <= i < n");
  if (options.suite == "corpus") (void)gemm_corpus(options.families);  // names every unknown family
  bool known_suite = options.suite == "all" || options.suite == "corpus";
  for (const auto& l : gemm_suite_layers()) known_suite = known_suite || l.model == options.suite;
  if (!known_suite)
    throw ConfigError("--suite '" + options.suite + "' is not 'all', 'corpus' or a model of the suite (demo, " +
                      "dlrm_mlperf, dcnv2_mlperf, wide, narrow)");
  try {
    (void)std::regex(options.filter, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    throw ConfigError("--filter '" + options.filter + "' is not a valid regular expression: " + e.what());
  }
  if (!gpu::has_device()) throw DeviceError("hetrec gemm bench needs a CUDA GPU, and no device is visible");
  Bench bench(options);
  bench.run();
}

}  // namespace hetrec::gemm::gemm

#else

namespace hetrec::inline gemm {

void run_gemm_bench(const GemmBenchOptions&) {
  throw DeviceError("hetrec gemm bench needs the CUDA build (cmake --preset cuda); this build has no cuBLASLt");
}

}  // namespace hetrec::gemm::gemm
#endif
