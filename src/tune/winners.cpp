#include "tune/winners.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/exclusive_file.h"
#include "tunable/small_gemm/small_gemm_variant.h"
#include "tunable/cross_net/cross_net_cost.h"
#include "tunable/dot_interaction/dot_backward_cost.h"
#include "tunable/dot_interaction/dot_interaction_cost.h"
#include "tunable/embedding_forward/embedding_forward_cost.h"
#include "tune/proposer_reply.h"
#include "tunable/small_gemm/small_gemm_cost.h"
#include "tunable/sparse_update/sparse_update_cost.h"

namespace hetrec::tune {

namespace {
constexpr int kSchemaVersion = 1;
// 16 hex digits: a 64-bit hash.
constexpr std::size_t kSourceHashDigits = 16;
// An upper bound on any stored time: one minute per launch is far beyond every kernel
// the tuner times.
constexpr double kMaxMicroseconds = 60e6;

nlohmann::json key_json(const WinnerKey& k) {
  return {{"kernel", k.kernel}, {"shape", k.shape}, {"gpu", k.gpu}, {"compute_capability", k.compute_capability},
          {"driver_version", k.driver_version}, {"source_hash", k.source_hash}};
}

// A winners file holds at most a few dozen entries; a model-rewritten header adds at
// most kMaxProposedHeaderBytes each. 16 MiB is far above any real file and keeps a
// damaged or hostile one from being read into memory whole.
constexpr std::size_t kMaxWinnersFileBytes = std::size_t{16} << 20;

const nlohmann::json& member(const nlohmann::json& e, const char* name, const std::string& where) {
  if (!e.contains(name)) throw ConfigError(where + ": missing key '" + name + "'");
  return e.at(name);
}

std::string text_field(const nlohmann::json& e, const char* name, const std::string& where, bool may_be_empty) {
  const nlohmann::json& v = member(e, name, where);
  if (!v.is_string()) throw ConfigError(where + ": key '" + name + "' must be a string, got " + v.dump());
  std::string s = v.get<std::string>();
  if (!may_be_empty && s.empty()) throw ConfigError(where + ": key '" + name + "' must not be empty");
  return s;
}

double time_field(const nlohmann::json& e, const char* name, const std::string& where, bool positive) {
  const nlohmann::json& v = member(e, name, where);
  if (!v.is_number()) throw ConfigError(where + ": key '" + name + "' must be a number, got " + v.dump());
  const double x = v.get<double>();
  if (!std::isfinite(x) || x < 0.0 || (positive && x == 0.0) || x > kMaxMicroseconds)
    throw ConfigError(where + ": key '" + name + "' = " + v.dump() + " is outside " + (positive ? "(0, " : "[0, ") +
                      std::to_string(kMaxMicroseconds) + "] us");
  return x;
}

// "9.0", "10.0", "12.1": major.minor, one or two digits each.
bool compute_capability_text(const std::string& s) {
  const auto dot = s.find('.');
  if (dot == std::string::npos || dot == 0 || dot > 2 || s.size() - dot - 1 < 1 || s.size() - dot - 1 > 2) return false;
  for (std::size_t i = 0; i < s.size(); ++i)
    if (i != dot && !std::isdigit(static_cast<unsigned char>(s[i]))) return false;
  return true;
}

// The source hashes of kernels::rtc_sources_hash and kernels::small_gemm_sources_hash:
// FNV-1a 64 as 16 lowercase hex digits.
bool source_hash_text(const std::string& s) {
  if (s.size() != kSourceHashDigits) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c)) && !(c >= 'a' && c <= 'f')) return false;
  return true;
}

// The variant space a stored winner's parameters must lie in: the kernel family's (for
// the small GEMMs, of the kind the shape key starts with).
VariantSpace space_of(const std::string& kernel, const std::string& shape, const std::string& where) {
  if (kernel == kEmbeddingForwardKernel) return embedding_forward_space();
  if (kernel == kDotForwardKernel) return dot_forward_space();
  if (kernel == kSparseUpdateKernel) return sparse_update_space();
  if (kernel == kDotBackwardKernel) return dot_backward_space();
  if (kernel == kCrossForwardKernel) return cross_forward_space();
  if (kernel == kCrossBackwardKernel) return cross_backward_space();
  if (kernel == kSmallGemmKernel) {
    const std::string kind = shape.substr(0, shape.find(' '));
    for (kernels::SmallGemmKind k : {kernels::SmallGemmKind::rows, kernels::SmallGemmKind::outer,
                                     kernels::SmallGemmKind::reduce})
      if (kind == kernels::small_gemm_kind_name(k)) return small_gemm_space(k);
    throw ConfigError(where + ": small_gemm shape '" + shape + "' does not start with rows, outer or reduce");
  }
  throw ConfigError(where + ": unknown kernel '" + kernel + "' (" + kEmbeddingForwardKernel + ", " + kDotForwardKernel +
                    ", " + kSparseUpdateKernel + ", " + kDotBackwardKernel + ", " + kCrossForwardKernel + ", " +
                    kCrossBackwardKernel + ", " + kSmallGemmKernel + ")");
}

// Exactly the space's parameters, each one of the values the space gives it.
ParameterSet params_in_space(const nlohmann::json& j, const VariantSpace& space, const std::string& where) {
  if (!j.is_object()) throw ConfigError(where + ": expected an object of integer parameters, got " + j.dump());
  ParameterSet p;
  for (const auto& [name, value] : j.items()) {
    const TunableParameter* param = nullptr;
    for (const TunableParameter& t : space.parameters)
      if (t.name == name) param = &t;
    if (!param) throw ConfigError(where + ": parameter '" + name + "' is not one of " + space.kernel + "'s");
    const bool in_int = value.is_number_integer() &&
                        (value.is_number_unsigned() ? value.get<uint64_t>() <= static_cast<uint64_t>(INT32_MAX)
                                                    : value.get<int64_t>() >= INT32_MIN && value.get<int64_t>() <= INT32_MAX);
    const int v = in_int ? static_cast<int>(value.get<int64_t>()) : 0;
    if (!in_int || std::find(param->values.begin(), param->values.end(), v) == param->values.end()) {
      std::string allowed;
      for (int a : param->values) allowed += (allowed.empty() ? "" : ", ") + std::to_string(a);
      throw ConfigError(where + ": parameter '" + name + "' = " + value.dump() + " is outside " + space.kernel +
                        "'s variant space {" + allowed + "}");
    }
    p[name] = v;
  }
  for (const TunableParameter& t : space.parameters)
    if (!p.count(t.name)) throw ConfigError(where + ": missing parameter '" + t.name + "' of " + space.kernel);
  return p;
}

Winner winner_from_json(const nlohmann::json& e, const std::string& where) {
  if (!e.is_object()) throw ConfigError(where + ": expected an object, got " + e.dump().substr(0, 80));
  static const char* const kKeys[] = {"kernel",   "shape",      "gpu",      "compute_capability", "driver_version",
                                      "source_hash", "params",  "time_us",  "default_us",         "floor_us",
                                      "workload", "kernel_header"};
  for (const auto& item : e.items()) {
    const std::string& name = item.key();
    if (std::find_if(std::begin(kKeys), std::end(kKeys), [&](const char* k) { return name == k; }) == std::end(kKeys))
      throw ConfigError(where + ": unknown key '" + name + "'");
  }
  Winner w;
  w.key.kernel = text_field(e, "kernel", where, false);
  w.key.shape = text_field(e, "shape", where, false);
  w.key.gpu = text_field(e, "gpu", where, false);
  w.key.compute_capability = text_field(e, "compute_capability", where, false);
  if (!compute_capability_text(w.key.compute_capability))
    throw ConfigError(where + ": compute_capability '" + w.key.compute_capability + "' is not major.minor");
  const nlohmann::json& driver = member(e, "driver_version", where);
  if (!driver.is_number_integer() || driver.get<int64_t>() <= 0 || driver.get<int64_t>() > INT32_MAX)
    throw ConfigError(where + ": key 'driver_version' must be a positive integer, got " + driver.dump());
  w.key.driver_version = static_cast<int>(driver.get<int64_t>());
  w.key.source_hash = text_field(e, "source_hash", where, false);
  if (!source_hash_text(w.key.source_hash))
    throw ConfigError(where + ": source_hash '" + w.key.source_hash + "' is not " + std::to_string(kSourceHashDigits) +
                      " lowercase hex digits (the FNV-1a hash of the kernel sources)");
  w.params = params_in_space(member(e, "params", where), space_of(w.key.kernel, w.key.shape, where), where + ".params");
  w.time_us = time_field(e, "time_us", where, true);
  w.default_us = time_field(e, "default_us", where, false);
  w.floor_us = time_field(e, "floor_us", where, false);
  if (e.contains("workload")) w.workload = text_field(e, "workload", where, true);
  if (e.contains("kernel_header")) {
    w.kernel_header = text_field(e, "kernel_header", where, false);
    try {
      check_proposed_header(w.kernel_header);
    } catch (const IoError& err) {
      throw ConfigError(where + ": kernel_header: " + err.what());
    }
  }
  return w;
}
}  // namespace

WinnersStore WinnersStore::load(const std::string& path) {
  WinnersStore store;
  std::ifstream f(path, std::ios::binary);
  if (!f) return store;
  std::string text;
  {
    char buf[65536];
    while (f.read(buf, sizeof buf) || f.gcount() > 0) {
      text.append(buf, static_cast<std::size_t>(f.gcount()));
      if (text.size() > kMaxWinnersFileBytes)
        throw ConfigError(path + ": larger than " + std::to_string(kMaxWinnersFileBytes) +
                          " bytes, the limit of a winners file");
    }
    if (f.bad()) throw ConfigError(path + ": cannot be read");
  }
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError(path + ": not valid JSON: " + e.what());
  }
  if (!j.is_object()) throw ConfigError(path + ": expected a JSON object with 'schema_version' and 'winners'");
  for (const auto& [name, value] : j.items())
    if (name != "schema_version" && name != "winners")
      throw ConfigError(path + ": unknown key '" + name + "' (expected schema_version, winners)");
  if (!j.contains("schema_version") || !j.at("schema_version").is_number_integer() ||
      j.at("schema_version").get<int64_t>() != kSchemaVersion)
    throw ConfigError(path + ": schema_version " + (j.contains("schema_version") ? j.at("schema_version").dump() : "missing") +
                      ", expected " + std::to_string(kSchemaVersion));
  if (!j.contains("winners") || !j.at("winners").is_array()) throw ConfigError(path + ": expected an array 'winners'");
  int index = 0;
  for (const nlohmann::json& e : j.at("winners")) {
    const std::string where = path + ": winners[" + std::to_string(index++) + "]";
    Winner w = winner_from_json(e, where);
    for (const Winner& earlier : store.winners_)
      if (earlier.key == w.key)
        throw ConfigError(where + ": a second winner for " + w.key.kernel + " [" + w.key.shape + "] on " + w.key.gpu +
                          " (one entry per kernel, shape, GPU, compute capability, driver and source hash)");
    store.winners_.push_back(std::move(w));
  }
  return store;
}

void WinnersStore::save(const std::string& path) const {
  nlohmann::json list = nlohmann::json::array();
  for (const Winner& w : winners_) {
    nlohmann::json e = key_json(w.key);
    e["params"] = to_json(w.params);
    e["time_us"] = w.time_us;
    e["default_us"] = w.default_us;
    e["floor_us"] = w.floor_us;
    e["workload"] = w.workload;
    if (!w.kernel_header.empty()) e["kernel_header"] = w.kernel_header;
    list.push_back(std::move(e));
  }
  const nlohmann::json j = {{"schema_version", kSchemaVersion}, {"winners", list}};
  // Through an exclusively created temporary, renamed into place (core/exclusive_file.h).
  try {
    write_file_atomically(path, j.dump(2) + "\n");
  } catch (const IoError& e) {
    throw IoError(std::string("tune: cannot write the winners file: ") + e.what());
  }
}

std::optional<Winner> WinnersStore::find(const WinnerKey& key) const {
  for (const Winner& w : winners_)
    if (w.key == key) return w;
  return std::nullopt;
}

std::vector<Winner> WinnersStore::stale(const WinnerKey& key) const {
  std::vector<Winner> out;
  for (const Winner& w : winners_)
    if (w.key.kernel == key.kernel && w.key.shape == key.shape && !(w.key == key)) out.push_back(w);
  return out;
}

bool WinnersStore::offer(const Winner& w) {
  for (Winner& existing : winners_)
    if (existing.key == w.key) {
      if (w.time_us >= existing.time_us) return false;
      existing = w;
      return true;
    }
  winners_.push_back(w);
  return true;
}

}  // namespace hetrec::tune
