#include "gemm/device_probe.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "core/exclusive_file.h"
#include "core/utc_time.h"

#if defined(HETREC_WITH_GPU)
#include <algorithm>
#include <vector>

#include "gemm/cublaslt_gemm.h"
#include "gemm/random_pool.h"
#include "gpu/blaslt.h"
#include "gpu/caching_allocator.h"
#include "gpu/device.h"
#include "gpu/device_buffer.h"
#include "gpu/event.h"
#include "gpu/memory.h"
#include "gpu/stream.h"
#endif

namespace hetrec::inline gemm {

namespace {

using nlohmann::json;

constexpr int kSchema = 2;  // 2: cluster_units
// Bounds of a cache file as it is read: a probe file is under a kilobyte; anything past
// 1 MiB is not one. Rates and sizes far above any device (10^6 TB/s or TFLOP/s, 1 PB,
// GEMMs of 2^20, 2^20 clusters) are damage, not measurements.
constexpr std::size_t kMaxProbeFileBytes = std::size_t{1} << 20;
constexpr double kMaxRate = 1e6;
constexpr double kMaxBytes = 1e15;
constexpr int64_t kMaxGemmSize = int64_t{1} << 20;
constexpr int64_t kMaxClusterCount = int64_t{1} << 20;

std::string why_validators_differ(const ProbeValidators& found, const ProbeValidators& expected) {
  if (found.gpu != expected.gpu) return "gpu is \"" + found.gpu + "\", this device is \"" + expected.gpu + "\"";
  if (found.driver != expected.driver) return "driver is " + found.driver + ", now " + expected.driver;
  if (found.runtime != expected.runtime) return "runtime is " + found.runtime + ", now " + expected.runtime;
  return "library is \"" + found.blas_library + "\", now \"" + expected.blas_library + "\"";
}

}  // namespace

double probe_gemm_tflops(const DeviceProbe& probe, const std::string& precision) {
  const auto it = probe.gemm_tflops.find(precision);
  if (it == probe.gemm_tflops.end() || !(it->second > 0))
    throw InternalError("device probe: no measured GEMM rate for " + precision);
  return it->second;
}

std::optional<DeviceProbe> load_device_probe(const std::string& path, const ProbeValidators& expected, std::string* why) {
  auto fail = [&](const std::string& reason) -> std::optional<DeviceProbe> {
    if (why) *why = reason;
    return std::nullopt;
  };
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(path + ": no such file");
  std::string text;
  {
    char buf[16384];
    while (in.read(buf, sizeof buf) || in.gcount() > 0) {
      text.append(buf, static_cast<std::size_t>(in.gcount()));
      if (text.size() > kMaxProbeFileBytes)
        return fail(path + ": larger than " + std::to_string(kMaxProbeFileBytes) + " bytes, not a probe cache");
    }
  }
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    return fail(path + ": " + e.what());
  }
  // Every key present with its type and within its bounds; anything else is damage.
  std::string problem;
  const auto has = [&](const char* key, bool ok, const char* expected_text) {
    if (!problem.empty()) return false;
    if (!j.contains(key)) problem = std::string("missing key '") + key + "'";
    else if (!ok)
      problem = std::string(key) + " must be " + expected_text + ", got " + j.at(key).dump().substr(0, 80);
    return problem.empty();
  };
  const auto text_of = [&](const char* key) {
    return has(key, j.contains(key) && j.at(key).is_string(), "a string") ? j.at(key).get<std::string>() : std::string();
  };
  const auto positive = [](const json& v, double limit) {
    return v.is_number() && std::isfinite(v.get<double>()) && v.get<double>() > 0 && v.get<double>() <= limit;
  };
  const auto int_in = [](const json& v, int64_t lo, int64_t hi) {
    if (!v.is_number_integer()) return false;
    if (v.is_number_unsigned())
      return v.get<uint64_t>() <= static_cast<uint64_t>(hi) && static_cast<int64_t>(v.get<uint64_t>()) >= lo;
    return v.get<int64_t>() >= lo && v.get<int64_t>() <= hi;
  };
  if (!j.is_object()) return fail(path + ": expected a JSON object");
  if (!j.contains("schema") || !int_in(j.at("schema"), kSchema, kSchema))
    return fail(path + ": schema is not " + std::to_string(kSchema));
  DeviceProbe p;
  p.validators.gpu = text_of("gpu");
  p.validators.driver = text_of("driver");
  p.validators.runtime = text_of("runtime");
  p.validators.blas_library = text_of("library");
  if (!problem.empty()) return fail(path + ": " + problem);
  if (!(p.validators == expected))
    return fail(path + ": written for another setup (" + why_validators_differ(p.validators, expected) + ")");
  p.date = text_of("date");
  if (has("copy_tbs", j.contains("copy_tbs") && positive(j.at("copy_tbs"), kMaxRate), "positive (TB/s, at most 1e6)"))
    p.copy_tbs = j.at("copy_tbs").get<double>();
  if (has("copy_bytes", j.contains("copy_bytes") && positive(j.at("copy_bytes"), kMaxBytes),
          "positive (bytes, at most 1e15)"))
    p.copy_bytes = j.at("copy_bytes").get<double>();
  if (has("gemm_size", j.contains("gemm_size") && int_in(j.at("gemm_size"), 1, kMaxGemmSize),
          "an integer in 1..1048576"))
    p.gemm_size = static_cast<int>(j.at("gemm_size").get<int64_t>());
  if (has("gemm_tflops", j.contains("gemm_tflops") && j.at("gemm_tflops").is_object(), "an object of rates"))
    for (const auto& [name, rate] : j.at("gemm_tflops").items()) {
      if (!positive(rate, kMaxRate))
        return fail(path + ": gemm_tflops." + name + " must be positive (TFLOP/s, at most 1e6)");
      p.gemm_tflops[name] = rate.get<double>();
    }
  if (has("cluster_units", j.contains("cluster_units") && j.at("cluster_units").is_array(), "an array"))
    for (const json& c : j.at("cluster_units")) {
      if (!c.is_object() || !c.contains("size") || !c.contains("ctas_per_unit") || !c.contains("max_active_clusters") ||
          !int_in(c.at("size"), 2, kMaxClusterCount) || !int_in(c.at("ctas_per_unit"), 1, kMaxClusterCount) ||
          !int_in(c.at("max_active_clusters"), 0, kMaxClusterCount))
        return fail(path + ": cluster_units needs size >= 2, ctas_per_unit >= 1, max_active_clusters >= 0 (integers "
                    "up to " + std::to_string(kMaxClusterCount) + ")");
      p.cluster_units.push_back({static_cast<int>(c.at("size").get<int64_t>()),
                                 static_cast<int>(c.at("ctas_per_unit").get<int64_t>()),
                                 static_cast<int>(c.at("max_active_clusters").get<int64_t>())});
    }
  if (!problem.empty()) return fail(path + ": " + problem);
  return p;
}

void save_device_probe(const DeviceProbe& p, const std::string& path) {
  json j = {{"schema", kSchema},
            {"gpu", p.validators.gpu},
            {"driver", p.validators.driver},
            {"runtime", p.validators.runtime},
            {"library", p.validators.blas_library},
            {"date", p.date},
            {"copy_tbs", p.copy_tbs},
            {"copy_bytes", p.copy_bytes},
            {"gemm_size", p.gemm_size},
            {"gemm_tflops", p.gemm_tflops},
            {"cluster_units", json::array()}};
  for (const kernels::ClusterUnits& u : p.cluster_units)
    j["cluster_units"].push_back(
        {{"size", u.cluster_size}, {"ctas_per_unit", u.ctas_per_unit}, {"max_active_clusters", u.max_active_clusters}});
  const std::filesystem::path target(path);
  std::error_code ec;
  if (target.has_parent_path()) std::filesystem::create_directories(target.parent_path(), ec);
  try {
    write_file_atomically(path, j.dump(2) + "\n");  // core/exclusive_file.h
  } catch (const IoError& e) {
    throw IoError(std::string("cannot write the device probe cache: ") + e.what());
  }
}

std::string default_device_probe_path(int device_index) {
  return default_cache_path("device-probe-" + std::to_string(device_index) + ".json");
}

std::string default_cache_path(const std::string& file) {
  if (const char* d = std::getenv("HETREC_CACHE_DIR"); d && *d) return std::string(d) + "/" + file;
  if (const char* d = std::getenv("XDG_CACHE_HOME"); d && *d) return std::string(d) + "/hetrec/" + file;
  if (const char* d = std::getenv("HOME"); d && *d) return std::string(d) + "/.cache/hetrec/" + file;
  return "";
}

DeviceProbe probe_device(int device_index, const std::string& path, bool refresh, const Logger& log) {
  const ProbeValidators v = local_probe_validators(device_index);
  if (!refresh && !path.empty()) {
    std::string why;
    if (auto cached = load_device_probe(path, v, &why)) return *cached;
    if (std::filesystem::exists(path)) log.warn("device probe: measuring again: " + why);
  }
  DeviceProbe p = measure_device_probe(device_index);
  if (!path.empty()) save_device_probe(p, path);
  return p;
}

#if defined(HETREC_WITH_GPU)

namespace {

// The copied buffer: large enough that launch overhead and the L2 (tens of MB) do not
// matter, at most a quarter of free memory (two buffers).
constexpr std::size_t kCopyBytes = std::size_t{1} << 30;
// M = N = K of the peak-rate GEMMs: big enough for every tile and wave count to be
// irrelevant (a few ms per launch in 16 bits), small enough to fit any GPU.
constexpr int kGemmSize = 8192;
constexpr int kWarmupLaunches = 3;
constexpr int kTimedLaunches = 10;  // the median is kept
constexpr uint64_t kProbeSeed = 0x70726f6265;  // "probe"

template <class Launch>
double median_ms(const gpu::Stream& stream, Launch&& launch) {
  for (int i = 0; i < kWarmupLaunches; ++i) launch();
  std::vector<gpu::Event> events(2 * kTimedLaunches);
  for (int i = 0; i < kTimedLaunches; ++i) {
    events[2 * i].record(stream.get());
    launch();
    events[2 * i + 1].record(stream.get());
  }
  events.back().synchronize();
  std::vector<double> ms(kTimedLaunches);
  for (int i = 0; i < kTimedLaunches; ++i) ms[i] = gpu::Event::elapsed_ms(events[2 * i], events[2 * i + 1]);
  std::sort(ms.begin(), ms.end());
  return ms[kTimedLaunches / 2];
}

}  // namespace

DeviceProbe measure_device_probe(int device_index) {
  DeviceProbe p;
  p.validators = local_probe_validators(device_index);
  p.date = utc_time("%Y-%m-%dT%H:%M:%SZ");
  gpu::set_device(device_index);
  gpu::Stream stream;

  const std::size_t copy_bytes = std::min(kCopyBytes, gpu::memory_info().free_bytes / 4);
  {
    gpu::DeviceBuffer src(copy_bytes), dst(copy_bytes);
    gpu::memset_async(src.get(), 0x3c, copy_bytes, stream.get());
    gpu::memset_async(dst.get(), 0, copy_bytes, stream.get());
    const double ms = median_ms(stream, [&] {
      gpu::memcpy_async(dst.get(), src.get(), copy_bytes, gpu::CopyKind::device_to_device, stream.get());
    });
    p.copy_bytes = static_cast<double>(copy_bytes);
    p.copy_tbs = 2.0 * static_cast<double>(copy_bytes) / (ms * 1e-3) / 1e12;
  }

  gpu::CachingDeviceAllocator allocator(device_index);
  cublaslt::Gemm gemm(allocator);
  p.gemm_size = kGemmSize;
  const int64_t n = kGemmSize;
  const double flops = 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);
  struct Precision {
    const char* name;
    cublaslt::Precision precision;
    DType d_type;
  };
  const Precision precisions[] = {{"fp32", cublaslt::Precision::fp32, DType::f32},
                                  {"tf32", cublaslt::Precision::tf32, DType::f32},
                                  {"bf16", cublaslt::Precision::bf16, DType::bf16},
                                  {"fp16", cublaslt::Precision::fp16, DType::f16}};
  uint64_t pool_stream = 0;
  for (const Precision& pr : precisions) {
    const DType in = cublaslt::operand_dtype(pr.precision);
    const std::size_t elems = static_cast<std::size_t>(n * n);
    gpu::DeviceBuffer a = random_device_pool(in, elems * dtype_size(in), kProbeSeed, pool_stream++);
    gpu::DeviceBuffer b = random_device_pool(in, elems * dtype_size(in), kProbeSeed, pool_stream++);
    gpu::DeviceBuffer d(elems * dtype_size(pr.d_type));
    cublaslt::Problem prob;
    prob.m = prob.n = prob.k = n;
    prob.lda = prob.ldb = prob.ldd = n;
    prob.precision = pr.precision;
    prob.d_type = pr.d_type;
    cublaslt::Operands ops;
    ops.a = a.get();
    ops.b = b.get();
    ops.d = d.get();
    const double ms = median_ms(stream, [&] { gemm.run(prob, ops, stream.get()); });
    p.gemm_tflops[pr.name] = flops / (ms * 1e-3) / 1e12;
  }
  stream.synchronize();
  p.cluster_units = kernels::measure_cluster_units(device_index);
  return p;
}

#else

DeviceProbe measure_device_probe(int) {
  throw DeviceError("the device probe needs a GPU build (cmake --preset cuda or hip); this build has none");
}

#endif  // HETREC_WITH_GPU

}  // namespace hetrec::gemm::gemm
