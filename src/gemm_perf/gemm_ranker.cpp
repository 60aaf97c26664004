#include "gemm_perf/gemm_ranker.h"

#include <xgboost/c_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/checksum.h"
#include "core/error.h"
#include "core/text_file.h"
#include "gemm_perf/gemm_model.h"

namespace hetrec::inline gemm_perf {

namespace {

using nlohmann::json;

// The column of log2_predicted_us in a GemmRankerRow.
std::size_t predicted_column() {
  for (std::size_t i = 0; i < kGemmRankerFeatures; ++i)
    if (std::string(kGemmRankerFeatureNames[i]) == "log2_predicted_us") return i;
  throw InternalError("GEMM ranker: no log2_predicted_us feature");
}

[[noreturn]] void bad(const std::string& path, const std::string& key, const std::string& what) {
  throw ConfigError("GEMM ranker " + path + ": " + key + ": " + what);
}

json read_ranker_json(const std::string& path) {
  try {
    return json::parse(read_text_file(path));
  } catch (const json::parse_error& e) {
    throw ConfigError("GEMM ranker " + path + ": not valid JSON: " + e.what());
  }
}

std::string string_at(const json& j, const char* key, const std::string& path, const std::string& where) {
  if (!j.is_object() || !j.contains(key) || !j.at(key).is_string()) bad(path, where + key, "expected a string");
  return j.at(key).get<std::string>();
}

void check_xgb(int rc, const std::string& path, const char* what) {
  if (rc != 0) throw ConfigError("GEMM ranker " + path + ": " + what + ": " + XGBGetLastError());
}

}  // namespace

namespace {

GemmRankerValidators trained_for(const json& j, const std::string& path) {
  if (!j.is_object() || !j.contains("validators")) bad(path, "$.validators", "missing");
  const json& v = j.at("validators");
  return {string_at(v, "gpu", path, "$.validators."), string_at(v, "driver", path, "$.validators."),
          string_at(v, "cublaslt_version", path, "$.validators."),
          string_at(v, "corpus_sha256", path, "$.validators.")};
}

// The first validator of `device` (non-empty) that `file` differs in, with both values.
std::optional<std::string> mismatch(const GemmRankerValidators& device, const GemmRankerValidators& file) {
  const std::pair<const char*, std::pair<std::string, std::string>> checks[] = {
      {"gpu", {device.gpu, file.gpu}},
      {"driver", {device.driver, file.driver}},
      {"cublaslt_version", {device.cublaslt_version, file.cublaslt_version}},
      {"corpus_sha256", {device.corpus_sha256, file.corpus_sha256}}};
  for (const auto& [key, values] : checks)
    if (!values.first.empty() && values.first != values.second)
      return std::string(key) + ": the ranker was trained for '" + values.second + "', this run has '" + values.first + "'";
  return std::nullopt;
}

}  // namespace

GemmRanker::~GemmRanker() {
  if (booster_) (void)XGBoosterFree(static_cast<BoosterHandle>(booster_));
}

std::unique_ptr<GemmRanker> load_gemm_ranker(const std::string& path, const GemmRankerValidators& device, int fold) {
  const json j = read_ranker_json(path);
  std::unique_ptr<GemmRanker> r(new GemmRanker());
  r->trained_for_ = trained_for(j, path);
  if (const auto why = mismatch(device, r->trained_for_))
    bad(path, "$.validators." + why->substr(0, why->find(':')),
        why->substr(why->find(':') + 2) + " (retrain it: tools/train_gemm_ranker.py)");
  if (!j.contains("features") || !j.at("features").is_array()) bad(path, "$.features", "expected an array");
  const json& names = j.at("features");
  bool same = names.size() == kGemmRankerFeatures;
  for (std::size_t i = 0; same && i < names.size(); ++i)
    same = names[i].is_string() && names[i].get<std::string>() == kGemmRankerFeatureNames[i];
  if (!same) bad(path, "$.features", "not the features this build computes (gemm_perf/gemm_ranker_features.h)");
  if (!j.contains("router") || !j.at("router").contains("short_kernel_us") ||
      !j.at("router").at("short_kernel_us").is_number())
    bad(path, "$.router.short_kernel_us", "expected a number");
  r->short_kernel_us_ = j.at("router").at("short_kernel_us").get<double>();
  const json* model = nullptr;
  std::string where = "$.model";
  if (fold < 0) {
    if (!j.contains("model") || !j.at("model").is_object()) bad(path, where, "expected an XGBoost model object");
    model = &j.at("model");
  } else {
    where = "$.folds[" + std::to_string(fold) + "].model";
    if (!j.contains("folds") || !j.at("folds").is_array() || static_cast<std::size_t>(fold) >= j.at("folds").size())
      bad(path, "$.folds", "has no fold " + std::to_string(fold));
    const json& f = j.at("folds").at(static_cast<std::size_t>(fold));
    if (!f.is_object() || !f.contains("model") || !f.at("model").is_object())
      bad(path, where, "expected an XGBoost model object");
    model = &f.at("model");
  }
  const std::string text = model->dump();
  BoosterHandle h = nullptr;
  check_xgb(XGBoosterCreate(nullptr, 0, &h), path, "XGBoosterCreate");
  r->booster_ = h;
  check_xgb(XGBoosterLoadModelFromBuffer(h, text.data(), text.size()), path, (where + " is not a model").c_str());
  check_xgb(XGBoosterSetParam(h, "nthread", "1"), path, "XGBoosterSetParam");
  return r;
}

GemmRankerValidators gemm_ranker_trained_for(const std::string& path) { return trained_for(read_ranker_json(path), path); }

std::string choose_gemm_ranker_file(const std::string& setting, const std::string& dir,
                                    const GemmRankerValidators& device) {
  if (setting == "none") return "";
  if (!setting.empty()) {
    if (const auto why = mismatch(device, gemm_ranker_trained_for(setting)))
      throw ConfigError("model.gemm_ranker = \"" + setting + "\": " + *why +
                        " (give a ranker of this GPU, \"\" to find one, or \"none\")");
    return setting;
  }
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_regular_file() && (name.ends_with(".json.xz") || name.ends_with(".json")))
      files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  for (const std::string& f : files)
    if (!mismatch(device, gemm_ranker_trained_for(f))) return f;
  return "";
}

std::string gemm_ranker_id(const std::string& path) {
  const std::string bytes = read_text_file(path);  // decompressed for .xz
  char crc[16];
  std::snprintf(crc, sizeof crc, "%08x", crc32c(bytes.data(), bytes.size()));
  return std::filesystem::path(path).filename().string() + ":" + crc;
}

std::vector<std::vector<std::string>> gemm_ranker_folds(const std::string& path) {
  const json j = read_ranker_json(path);
  if (!j.is_object() || !j.contains("folds") || !j.at("folds").is_array()) bad(path, "$.folds", "expected an array");
  std::vector<std::vector<std::string>> out;
  for (std::size_t i = 0; i < j.at("folds").size(); ++i) {
    const json& f = j.at("folds").at(i);
    const std::string key = "$.folds[" + std::to_string(i) + "].families";
    if (!f.is_object() || !f.contains("families") || !f.at("families").is_array()) bad(path, key, "expected an array");
    std::vector<std::string> fam;
    for (const json& name : f.at("families")) {
      if (!name.is_string()) bad(path, key, "expected family names (strings)");
      fam.push_back(name.get<std::string>());
    }
    out.push_back(std::move(fam));
  }
  return out;
}

std::vector<float> GemmRanker::score(const std::vector<GemmRankerRow>& rows) const {
  if (rows.empty()) return {};
  // In-place prediction from the rows as they lie (no DMatrix is built): an
  // __array_interface__ of rows x features float32 values, row-major.
  char values[160];
  std::snprintf(values, sizeof values,
                R"({"data": [%llu, true], "shape": [%zu, %zu], "typestr": "<f4", "version": 3})",
                static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(rows.front().data())), rows.size(),
                kGemmRankerFeatures);
  const char* config =
      R"({"type": 0, "training": false, "iteration_begin": 0, "iteration_end": 0, "strict_shape": false, "missing": NaN, "cache_id": 0})";
  const bst_ulong* shape = nullptr;
  bst_ulong dim = 0;
  const float* result = nullptr;
  if (XGBoosterPredictFromDense(static_cast<BoosterHandle>(booster_), values, config, nullptr, &shape, &dim, &result) != 0)
    throw InternalError(std::string("GEMM ranker: XGBoosterPredictFromDense: ") + XGBGetLastError());
  return std::vector<float>(result, result + rows.size());
}

RankerPick route_gemm_choice(const GemmRanker& ranker, const RankerRows& rows, int heuristic) {
  RankerPick pick{heuristic, false, heuristic};
  if (rows.rows.empty()) return pick;
  const std::vector<float> s = ranker.score(rows.rows);
  const auto best = static_cast<std::size_t>(std::min_element(s.begin(), s.end()) - s.begin());
  pick.ranker_best = static_cast<int>(rows.candidate[best]);
  std::size_t row = best;
  for (std::size_t r = 0; r < rows.candidate.size(); ++r)
    if (heuristic >= 0 && rows.candidate[r] == static_cast<std::size_t>(heuristic)) row = r;
  const float predicted_log2 = rows.rows[row][predicted_column()];
  if (std::exp2(static_cast<double>(predicted_log2)) < ranker.short_kernel_us()) {
    pick.candidate = pick.ranker_best;
    pick.learned = true;
  }
  return pick;
}

std::vector<int> ranker_shortlist(const GemmRanker& ranker, const RankerRows& rows, int heuristic, int k) {
  return ranker_shortlist(k > 0 && !rows.rows.empty() ? ranker.score(rows.rows) : std::vector<float>(), rows,
                          heuristic, k);
}

std::vector<int> ranker_shortlist(const std::vector<float>& score, const RankerRows& rows, int heuristic, int k) {
  std::vector<int> out;
  if (k > 0 && !score.empty()) {
    std::vector<std::size_t> order(score.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return score[a] < score[b]; });
    for (std::size_t i = 0; i < order.size() && out.size() < static_cast<std::size_t>(k); ++i)
      out.push_back(static_cast<int>(rows.candidate[order[i]]));
  }
  if (heuristic >= 0 && std::find(out.begin(), out.end(), heuristic) == out.end()) out.push_back(heuristic);
  return out;
}

std::size_t shortlist_winner(const std::vector<double>& us, int heuristic) {
  if (us.empty()) throw InternalError("shortlist_winner: no times");
  const std::size_t best = static_cast<std::size_t>(std::min_element(us.begin(), us.end()) - us.begin());
  if (heuristic < 0) return best;
  const std::size_t h = static_cast<std::size_t>(heuristic);
  return us[best] < us.at(h) * (1.0 - kShortlistMargin) ? best : h;
}

RankerPick select_gemm_by_ranker(const GemmRanker& ranker, const Hardware& hw, const GemmModelParams& params,
                                 const GemmProblem& problem, const std::vector<RankerCandidate>& candidates,
                                 int heuristic) {
  if (heuristic >= 0) {
    const RankerCandidate& h = candidates[static_cast<std::size_t>(heuristic)];
    const double t = predict_best_of(hw, params, h.transposed ? transposed_product(problem) : problem, h.config,
                                     h.alternatives);
    // The same float rounding as the feature the router reads in route_gemm_choice.
    if (!std::isnan(t) && std::exp2(static_cast<double>(static_cast<float>(std::log2(t)))) >= ranker.short_kernel_us())
      return {heuristic, false, -1};
  }
  return route_gemm_choice(ranker, gemm_ranker_rows(hw, params, problem, candidates), heuristic);
}

RankerEvaluation evaluate_ranker_held_out(const std::string& ranker_path, const GemmRankerValidators& device,
                                          const Hardware& hw, const GemmModelParams& params,
                                          const std::vector<RankerShape>& shapes) {
  const auto folds = gemm_ranker_folds(ranker_path);
  std::map<std::string, int> fold_of;
  for (std::size_t f = 0; f < folds.size(); ++f)
    for (const auto& fam : folds[f]) fold_of[fam] = static_cast<int>(f);
  std::vector<std::unique_ptr<GemmRanker>> models;
  for (std::size_t f = 0; f < folds.size(); ++f) models.push_back(load_gemm_ranker(ranker_path, device, static_cast<int>(f)));
  std::vector<double> ranker, routed, heuristic;
  double oracle_sum = 0, ranker_sum = 0, routed_sum = 0, heuristic_sum = 0;
  constexpr std::size_t kLists = std::size(kShortlistSizes);
  std::vector<std::vector<double>> listed(kLists);
  std::vector<double> listed_sum(kLists, 0.0);
  RankerEvaluation e;
  for (const RankerShape& s : shapes) {
    const auto it = fold_of.find(s.family);
    if (it == fold_of.end())
      throw ConfigError("GEMM ranker " + ranker_path + ": family '" + s.family + "' (shape " + s.id +
                        ") is in no fold: the ranker was not trained on this corpus");
    if (!(s.heuristic_us > 0.0) || s.candidates.empty()) continue;
    const GemmRanker& model = *models[static_cast<std::size_t>(it->second)];
    // Every shape's rows, scored for the ranker's own pick and for the shortlists alike.
    const RankerRows rr = gemm_ranker_rows(hw, params, s.problem, s.candidates);
    const RankerPick pick = route_gemm_choice(model, rr, s.heuristic_candidate);
    const double ranker_us = s.measured_us[static_cast<std::size_t>(pick.ranker_best)];
    const double routed_us = pick.learned ? s.measured_us[static_cast<std::size_t>(pick.candidate)] : s.heuristic_us;
    e.routed_learned += pick.learned ? 1 : 0;
    ++e.shapes;
    ranker.push_back(s.oracle_us / ranker_us);
    routed.push_back(s.oracle_us / routed_us);
    heuristic.push_back(s.oracle_us / s.heuristic_us);
    oracle_sum += s.oracle_us, ranker_sum += ranker_us, routed_sum += routed_us, heuristic_sum += s.heuristic_us;
    // The timed shortlists, as the engine takes them; the heuristic's own time stands for its top-1.
    const std::vector<float> score = model.score(rr.rows);
    for (std::size_t l = 0; l < kLists; ++l) {
      const std::vector<int> list = ranker_shortlist(score, rr, s.heuristic_candidate, kShortlistSizes[l]);
      std::vector<double> us;
      int h = -1;
      for (const int c : list) {
        if (c == s.heuristic_candidate) h = static_cast<int>(us.size());
        us.push_back(c == s.heuristic_candidate ? s.heuristic_us : s.measured_us[static_cast<std::size_t>(c)]);
      }
      if (h < 0) {  // its time all the same, as the library returns it
        h = static_cast<int>(us.size());
        us.push_back(s.heuristic_us);
      }
      const double t = us[shortlist_winner(us, h)];
      listed[l].push_back(s.oracle_us / t);
      listed_sum[l] += t;
    }
  }
  const auto geomean = [](const std::vector<double>& v) {
    double l = 0;
    for (const double x : v) l += std::log(x);
    return v.empty() ? 0.0 : std::exp(l / static_cast<double>(v.size()));
  };
  e.ranker_geomean = geomean(ranker), e.ranker_p5 = percentile(ranker, 0.05);
  e.routed_geomean = geomean(routed), e.routed_p5 = percentile(routed, 0.05);
  e.heuristic_geomean = geomean(heuristic), e.heuristic_p5 = percentile(heuristic, 0.05);
  if (e.shapes > 0) {
    e.ranker_time_weighted = oracle_sum / ranker_sum;
    e.routed_time_weighted = oracle_sum / routed_sum;
    e.heuristic_time_weighted = oracle_sum / heuristic_sum;
  }
  for (std::size_t l = 0; l < kLists; ++l)
    e.shortlist.push_back({kShortlistSizes[l], geomean(listed[l]), percentile(listed[l], 0.05),
                           e.shapes > 0 ? oracle_sum / listed_sum[l] : 0.0});
  return e;
}

}  // namespace hetrec::gemm_perf::gemm_perf
