#include "gemm_perf/gemm_oracle.h"

#include "core/text_file.h"

#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>

#include "core/error.h"

namespace hetrec::inline gemm_perf {

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

OracleCandidate parse_candidate(const json& row, const std::string& where, const std::string& path) {
  constexpr std::size_t kColumns = std::size(kOracleCandidateColumns);
  if (!row.is_array() || row.size() != kColumns)
    bad(where, path, "expected an array of " + std::to_string(kColumns) + " numbers (candidate_columns)");
  for (std::size_t i = 0; i < kColumns; ++i)
    if (!row[i].is_number()) bad(where, path + "[" + std::to_string(i) + "]", std::string("expected a number (") +
                                                                                 kOracleCandidateColumns[i] + ")");
  auto integer = [&](std::size_t i) { return row[i].get<int>(); };
  OracleCandidate o;
  o.algo_id = integer(0);
  o.tile_id = integer(1);
  o.stages_id = integer(2);
  o.split_k = integer(3);
  o.reduction = integer(4);
  o.swizzle = integer(5);
  o.cluster_id = integer(6);
  o.custom_option = integer(7);
  o.workspace = row[8].get<uint64_t>();
  o.median_us = row[9].get<double>();
  o.min_us = row[10].get<double>();
  o.max_error = row[11].get<double>();
  o.config.tile_m = integer(12);
  o.config.tile_n = integer(13);
  o.config.tile_k = integer(14);
  o.config.stages = integer(15);
  o.config.cluster_m = integer(16);
  o.config.cluster_n = integer(17);
  o.config.swizzle = integer(18);
  o.config.split_k = o.split_k;
  o.config.decomposition = o.split_k > 1 ? GemmDecomposition::split_k : GemmDecomposition::data_parallel;
  if (o.split_k < 1) bad(where, path + "[3]", "split_k must be >= 1");
  o.key = oracle_candidate_key(o.algo_id, o.tile_id, o.stages_id, o.split_k, o.reduction, o.swizzle, o.cluster_id,
                               o.custom_option);
  return o;
}

}  // namespace

std::string oracle_candidate_key(int algo_id, int tile_id, int stages_id, int split_k, int reduction, int swizzle,
                                 int cluster_id, int custom_option) {
  std::string key;
  const std::pair<char, int> parts[] = {{'a', algo_id},   {'t', tile_id},    {'s', stages_id}, {'k', split_k},
                                        {'r', reduction}, {'w', swizzle},    {'c', cluster_id}, {'o', custom_option}};
  for (const auto& [letter, value] : parts) {
    if (!key.empty()) key += '.';
    key += letter;
    key += std::to_string(value);
  }
  return key;
}

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
  // The paths are named strings, not temporaries: a reference returned by get_array or
  // field must not look bound to an argument that dies with the statement.
  const std::string root = "$";
  const json& columns = get_array(j, "candidate_columns", where, root);
  bool same = columns.size() == std::size(kOracleCandidateColumns);
  for (std::size_t i = 0; same && i < columns.size(); ++i)
    same = columns[i].is_string() && columns[i].get<std::string>() == kOracleCandidateColumns[i];
  if (!same) bad(where, "$.candidate_columns", "not the columns this reader knows (" + columns.dump() + ")");
  const json& shapes = get_array(j, "shapes", where, root);
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    const std::string p = "$.shapes[" + std::to_string(i) + "]";
    const json& s = shapes[i];
    OracleShape sh;
    sh.id = get_string(s, "id", where, p);
    if (s.contains("family")) {
      sh.family = get_string(s, "family", where, p);
    } else {
      const auto first = sh.id.find('.');
      sh.family = sh.id.substr(0, first == std::string::npos ? first : sh.id.find('.', first + 1));
    }
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
    if (h.contains("listed")) {
      const std::string hp = p + ".heuristic";
      const json& listed = get_array(h, "listed", where, hp);
      for (std::size_t l = 0; l < listed.size(); ++l) {
        if (!listed[l].is_string())
          bad(where, p + ".heuristic.listed[" + std::to_string(l) + "]", "expected a configuration key (string)");
        sh.heuristic_listed.push_back(listed[l].get<std::string>());
      }
      sh.heuristic_list_query_us = get_number<double>(h, "list_query_us", where, p + ".heuristic");
    }
    if (h.contains("returned")) {
      const std::string hp = p + ".heuristic";
      const json& returned = get_array(h, "returned", where, hp);
      for (std::size_t r = 0; r < returned.size(); ++r) {
        const std::string rp = hp + ".returned[" + std::to_string(r) + "]";
        OracleCandidate c = parse_candidate(field(returned[r], "row", where, rp), where, rp + ".row");
        c.returned_rank = get_number<int>(returned[r], "rank", where, rp);
        if (c.returned_rank < 0) bad(where, rp + ".rank", "expected a rank >= 0");
        sh.returned.push_back(std::move(c));
      }
    }
    const json& cands = get_array(s, "candidates", where, p);
    for (std::size_t c = 0; c < cands.size(); ++c) {
      sh.candidates.push_back(parse_candidate(cands[c], where, p + ".candidates[" + std::to_string(c) + "]"));
    }
    const int64_t index = get_number<int64_t>(h, "index", where, p + ".heuristic");
    if (index >= 0) {
      if (static_cast<std::size_t>(index) >= sh.candidates.size() ||
          sh.candidates[static_cast<std::size_t>(index)].key != sh.heuristic_key)
        bad(where, p + ".heuristic.index", "does not name the candidate " + sh.heuristic_key);
      sh.heuristic_index = static_cast<std::size_t>(index);
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
  return parse_gemm_oracle(read_text_file(path), path);  // ".xz" files are decompressed
}

}  // namespace hetrec::gemm_perf::gemm_perf
