#include "perf/gemm_oracle.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"

namespace hetrec {

namespace {

using nlohmann::json;

[[noreturn]] void bad(const std::string& where, const std::string& path, const std::string& what) {
  throw ConfigError(where + ": " + path + ": " + what);
}

const json& field(const json& obj, const char* key, const std::string& where, const std::string& path) {
  if (!obj.is_object()) bad(where, path, "expected an object");
  auto it = obj.find(key);
  if (it == obj.end()) bad(where, path + "." + key, "missing");
  return *it;
}

std::string get_string(const json& obj, const char* key, const std::string& where, const std::string& path) {
  const json& v = field(obj, key, where, path);
  if (!v.is_string()) bad(where, path + "." + key, "expected a string");
  return v.get<std::string>();
}

template <class T>
T get_number(const json& obj, const char* key, const std::string& where, const std::string& path) {
  const json& v = field(obj, key, where, path);
  if (!v.is_number()) bad(where, path + "." + key, "expected a number");
  return v.get<T>();
}

bool get_bool(const json& obj, const char* key, const std::string& where, const std::string& path) {
  const json& v = field(obj, key, where, path);
  if (!v.is_boolean()) bad(where, path + "." + key, "expected true or false");
  return v.get<bool>();
}

const json& get_array(const json& obj, const char* key, const std::string& where, const std::string& path) {
  const json& v = field(obj, key, where, path);
  if (!v.is_array()) bad(where, path + "." + key, "expected an array");
  return v;
}

OracleCandidate parse_candidate(const json& c, const std::string& where, const std::string& path) {
  OracleCandidate o;
  o.key = get_string(c, "key", where, path);
  o.algo_id = get_number<int>(c, "algo_id", where, path);
  o.tile = get_string(c, "tile", where, path);
  o.tile_id = get_number<int>(c, "tile_id", where, path);
  o.stages = get_string(c, "stages", where, path);
  o.stages_id = get_number<int>(c, "stages_id", where, path);
  o.split_k = get_number<int>(c, "split_k", where, path);
  o.reduction = get_number<int>(c, "reduction", where, path);
  o.swizzle = get_number<int>(c, "swizzle", where, path);
  o.cluster = get_string(c, "cluster", where, path);
  o.cluster_id = get_number<int>(c, "cluster_id", where, path);
  o.custom_option = get_number<int>(c, "custom_option", where, path);
  o.workspace = get_number<uint64_t>(c, "workspace", where, path);
  o.median_us = get_number<double>(c, "median_us", where, path);
  o.min_us = get_number<double>(c, "min_us", where, path);
  o.config = parse_gemm_config(get_string(c, "config", where, path), where + ": " + path + ".config");
  return o;
}

}  // namespace

GemmOracle parse_gemm_oracle(const std::string& text, const std::string& where) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    throw ConfigError(where + ": not valid JSON: " + e.what());
  }
  GemmOracle o;
  o.schema = get_number<int>(j, "schema", where, "$");
  if (o.schema != kGemmOracleSchema)
    bad(where, "$.schema", "expected " + std::to_string(kGemmOracleSchema) + ", found " + std::to_string(o.schema));
  o.date = get_string(j, "date", where, "$");
  o.gpu = get_string(j, "gpu", where, "$");
  o.driver = get_string(j, "driver", where, "$");
  o.cublaslt_version = get_string(j, "cublaslt_version", where, "$");
  o.cuda_runtime = get_string(j, "cuda_runtime", where, "$");
  o.commit = get_string(j, "commit", where, "$");
  o.command = get_string(j, "command", where, "$");
  o.launches = get_number<int>(j, "launches", where, "$");
  o.warmup = get_number<int>(j, "warmup", where, "$");
  o.rotation_bytes = get_number<uint64_t>(j, "rotation_bytes", where, "$");
  const json& shapes = get_array(j, "shapes", where, "$");
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    const std::string p = "$.shapes[" + std::to_string(i) + "]";
    const json& s = shapes[i];
    OracleShape sh;
    sh.id = get_string(s, "id", where, p);
    sh.m = get_number<int64_t>(s, "m", where, p);
    sh.n = get_number<int64_t>(s, "n", where, p);
    sh.k = get_number<int64_t>(s, "k", where, p);
    sh.trans_a = get_bool(s, "trans_a", where, p);
    sh.trans_b = get_bool(s, "trans_b", where, p);
    sh.precision = get_string(s, "precision", where, p);
    sh.epilogue = get_string(s, "epilogue", where, p);
    sh.d_type = get_string(s, "d_type", where, p);
    if (s.contains("skipped")) {
      sh.skipped = get_string(s, "skipped", where, p);
      o.shapes.push_back(std::move(sh));
      continue;
    }
    const json& h = field(s, "heuristic", where, p);
    sh.heuristic_key = get_string(h, "key", where, p + ".heuristic");
    sh.heuristic_median_us = get_number<double>(h, "median_us", where, p + ".heuristic");
    sh.heuristic_min_us = get_number<double>(h, "min_us", where, p + ".heuristic");
    const json& cands = get_array(s, "candidates", where, p);
    for (std::size_t c = 0; c < cands.size(); ++c) {
      sh.candidates.push_back(parse_candidate(cands[c], where, p + ".candidates[" + std::to_string(c) + "]"));
      if (sh.candidates.back().key == sh.heuristic_key) sh.heuristic_index = c;
    }
    const json& rej = get_array(s, "rejected", where, p);
    for (std::size_t r = 0; r < rej.size(); ++r) {
      const std::string rp = p + ".rejected[" + std::to_string(r) + "]";
      sh.rejected.push_back({get_string(rej[r], "key", where, rp), get_string(rej[r], "reason", where, rp),
                             get_number<double>(rej[r], "max_err", where, rp)});
    }
    o.shapes.push_back(std::move(sh));
  }
  return o;
}

GemmOracle load_gemm_oracle(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError("cannot open GEMM oracle results " + path);
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw IoError("cannot read GEMM oracle results " + path);
  return parse_gemm_oracle(text.str(), path);
}

}  // namespace hetrec
