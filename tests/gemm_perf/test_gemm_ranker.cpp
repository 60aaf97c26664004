// The learned GEMM ranker's file checks (validators, features, folds), its features' key
// parsing, and the router's two branches, on the shipped ranker and small crafted files.
#include <gtest/gtest.h>

#include <fstream>
#include <algorithm>
#include <map>
#include <set>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/text_file.h"
#include "gemm_perf/gemm_oracle.h"
#include "gemm_perf/gemm_ranker.h"
#include "gemm_perf_test_support.h"

namespace hetrec {
namespace {

const std::string kRanker = std::string(HETREC_SOURCE_DIR) + "/gemm/rankers/h200-20261130d.json.xz";
const std::string kOracle = std::string(HETREC_SOURCE_DIR) + "/bench/results/gemm-oracle-20261130d-h200.json.xz";
const GemmRankerValidators kH200{"NVIDIA H200", "13.0", "130100", ""};

std::string expect_config_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a ConfigError";
  return "";
}

// The shipped ranker with `edit` applied, written to a scratch file.
std::string edited_ranker(const std::string& name, const std::function<void(nlohmann::json&)>& edit) {
  nlohmann::json j = nlohmann::json::parse(read_text_file(kRanker));
  edit(j);
  const std::string path = ::testing::TempDir() + name + ".json";
  std::ofstream(path) << j.dump();
  return path;
}

TEST(GemmRanker, LoadsForItsGpuAndRefusesAnother) {
  EXPECT_NO_THROW((void)load_gemm_ranker(kRanker, kH200));
  const std::string gpu = expect_config_error([] { (void)load_gemm_ranker(kRanker, {"NVIDIA A100", "", "", ""}); });
  EXPECT_NE(gpu.find("$.validators.gpu"), std::string::npos) << gpu;
  EXPECT_NE(gpu.find("NVIDIA H200"), std::string::npos) << gpu;
  EXPECT_NE(gpu.find("NVIDIA A100"), std::string::npos) << gpu;
  const std::string lib = expect_config_error([] { (void)load_gemm_ranker(kRanker, {"", "", "120900", ""}); });
  EXPECT_NE(lib.find("cublaslt_version"), std::string::npos) << lib;
  const std::string corpus = expect_config_error([] { (void)load_gemm_ranker(kRanker, {"", "", "", "00ff"}); });
  EXPECT_NE(corpus.find("corpus_sha256"), std::string::npos) << corpus;
}

// model.gemm_ranker: "" finds the shipped file trained for the device (and none for another
// GPU or cuBLASLt), "none" turns it off, and a named file of another GPU is refused naming the key.
TEST(GemmRanker, ARunFindsTheRankerOfItsDeviceOrNone) {
  const std::string dir = std::string(HETREC_SOURCE_DIR) + "/gemm/rankers";
  EXPECT_EQ(choose_gemm_ranker_file("", dir, kH200), kRanker);
  EXPECT_EQ(choose_gemm_ranker_file("", dir, {"NVIDIA H100 80GB HBM3", "13.0", "130100", ""}),
            dir + "/h100-20261207.json.xz");
  EXPECT_EQ(choose_gemm_ranker_file("", dir, {"NVIDIA A100-SXM4-40GB", "13.0", "130100", ""}), "");
  EXPECT_EQ(choose_gemm_ranker_file("", dir, {"NVIDIA H200", "13.0", "120900", ""}), "");
  EXPECT_EQ(choose_gemm_ranker_file("none", dir, kH200), "");
  EXPECT_EQ(choose_gemm_ranker_file("", ::testing::TempDir() + "/no-such-folder", kH200), "");
  EXPECT_EQ(choose_gemm_ranker_file(kRanker, dir, kH200), kRanker);
  const std::string e =
      expect_config_error([&] { (void)choose_gemm_ranker_file(kRanker, dir, {"NVIDIA A100-SXM4-40GB", "", "", ""}); });
  EXPECT_NE(e.find("model.gemm_ranker"), std::string::npos) << e;
  EXPECT_NE(e.find("NVIDIA A100-SXM4-40GB"), std::string::npos) << e;
  EXPECT_NE(e.find("NVIDIA H200"), std::string::npos) << e;
  // The identity that joins the selections file's validators: the name and a checksum of the content.
  const std::string id = gemm_ranker_id(kRanker);
  EXPECT_EQ(id.rfind("h200-20261130d.json.xz:", 0), 0u) << id;
  const std::string other = edited_ranker("identity", [](nlohmann::json& j) { j["router"]["short_kernel_us"] = 20.0; });
  EXPECT_NE(gemm_ranker_id(other).substr(gemm_ranker_id(other).find(':')), id.substr(id.find(':')));
}

TEST(GemmRanker, RefusesOtherFeaturesMissingFoldsAndBrokenModels) {
  const std::string features = edited_ranker("features", [](nlohmann::json& j) { j["features"][0] = "log2_q"; });
  EXPECT_NE(expect_config_error([&] { (void)load_gemm_ranker(features, kH200); }).find("$.features"),
            std::string::npos);
  EXPECT_NE(expect_config_error([] { (void)load_gemm_ranker(kRanker, kH200, 99); }).find("no fold 99"),
            std::string::npos);
  const std::string model = edited_ranker("model", [](nlohmann::json& j) { j["model"] = {{"learner", 3}}; });
  EXPECT_NE(expect_config_error([&] { (void)load_gemm_ranker(model, kH200); }).find("$.model"), std::string::npos);
  const std::string router = edited_ranker("router", [](nlohmann::json& j) { j.erase("router"); });
  EXPECT_NE(expect_config_error([&] { (void)load_gemm_ranker(router, kH200); }).find("short_kernel_us"),
            std::string::npos);
}

TEST(GemmRanker, FoldsCoverDisjointFamilies) {
  const auto folds = gemm_ranker_folds(kRanker);
  ASSERT_GE(folds.size(), 2u);
  std::set<std::string> seen;
  for (const auto& f : folds)
    for (const auto& fam : f) EXPECT_TRUE(seen.insert(fam).second) << fam << " in two folds";
}

TEST(GemmRanker, UnknownFamilyIsAnError) {
  const Hardware hw = test::shipped_hardware("h200_sxm");
  auto shapes = ranker_shapes(hw, load_gemm_oracle(kOracle));
  shapes.resize(1);
  shapes[0].family = "not_a_family";
  const std::string e = expect_config_error(
      [&] { (void)evaluate_ranker_held_out(kRanker, kH200, hw, test::shipped_params(hw), shapes); });
  EXPECT_NE(e.find("not_a_family"), std::string::npos) << e;
}

TEST(GemmRanker, RouterKeepsTheHeuristicOnLongKernelsAndRanksShortOnes) {
  const Hardware hw = test::shipped_hardware("h200_sxm");
  const GemmModelParams params = test::shipped_params(hw);
  const auto ranker = load_gemm_ranker(kRanker, kH200);
  std::size_t learned = 0, kept = 0;
  for (const RankerShape& s : ranker_shapes(hw, load_gemm_oracle(kOracle))) {
    if (s.heuristic_candidate < 0) continue;
    const RankerPick p = select_gemm_by_ranker(*ranker, hw, params, s.problem, s.candidates, s.heuristic_candidate);
    const RankerRows rows = gemm_ranker_rows(hw, params, s.problem, s.candidates);
    const RankerPick full = route_gemm_choice(*ranker, rows, s.heuristic_candidate);
    EXPECT_EQ(p.candidate, full.candidate) << s.id;  // the shortcut changes no choice
    EXPECT_EQ(p.learned, full.learned) << s.id;
    if (p.learned) {
      ++learned;
    } else {
      ++kept;
      EXPECT_EQ(p.candidate, s.heuristic_candidate) << s.id;
    }
    // Shortlist: never empty, the heuristic's top-1 always in it.
    ASSERT_FALSE(rows.rows.empty());
    EXPECT_NE(std::find(rows.candidate.begin(), rows.candidate.end(), std::size_t(s.heuristic_candidate)),
              rows.candidate.end());
  }
  EXPECT_GT(learned, 0u);
  EXPECT_GT(kept, 0u);
}

// The timed shortlist: the k best-scored candidates in score order (the first is the
// ranker's own pick), distinct, then the heuristic's top-1 where they lack it; k = 0 leaves
// the heuristic's top-1 alone, and without one nothing is added.
TEST(GemmRanker, ShortlistTakesTheBestScoredAndTheHeuristicsTopOne) {
  const Hardware hw = test::shipped_hardware("h200_sxm");
  const GemmModelParams params = test::shipped_params(hw);
  const auto ranker = load_gemm_ranker(kRanker, kH200);
  std::size_t appended = 0, shapes = 0;
  for (const RankerShape& s : ranker_shapes(hw, load_gemm_oracle(kOracle))) {
    if (s.heuristic_candidate < 0 || ++shapes > 60) continue;
    const RankerRows rows = gemm_ranker_rows(hw, params, s.problem, s.candidates);
    const std::vector<float> score = ranker->score(rows.rows);
    const RankerPick pick = route_gemm_choice(*ranker, rows, s.heuristic_candidate);
    const std::vector<int> list = ranker_shortlist(*ranker, rows, s.heuristic_candidate, 5);
    const std::size_t top = std::min<std::size_t>(5, rows.rows.size());
    ASSERT_GE(list.size(), top) << s.id;
    ASSERT_LE(list.size(), top + 1) << s.id;
    EXPECT_EQ(list.front(), pick.ranker_best) << s.id;
    EXPECT_EQ(std::set<int>(list.begin(), list.end()).size(), list.size()) << s.id;
    EXPECT_NE(std::find(list.begin(), list.end(), s.heuristic_candidate), list.end()) << s.id;
    // Score order: each of the first `top` scores no better than the one before, and no
    // row outside them scores better than the last of them.
    const auto score_of = [&](int candidate) {
      for (std::size_t r = 0; r < rows.candidate.size(); ++r)
        if (rows.candidate[r] == static_cast<std::size_t>(candidate)) return score[r];
      ADD_FAILURE() << "candidate " << candidate << " has no row";
      return 0.0f;
    };
    for (std::size_t i = 1; i < top; ++i) EXPECT_LE(score_of(list[i - 1]), score_of(list[i])) << s.id;
    std::size_t better = 0;
    for (const float x : score) better += x < score_of(list[top - 1]) ? 1 : 0;
    EXPECT_LE(better, top - 1) << s.id;
    if (list.size() == top + 1) {
      ++appended;
      EXPECT_EQ(list.back(), s.heuristic_candidate) << s.id;
    }
    EXPECT_EQ(ranker_shortlist(*ranker, rows, s.heuristic_candidate, 0), std::vector<int>{s.heuristic_candidate});
    EXPECT_EQ(ranker_shortlist(*ranker, rows, -1, 2).size(), std::min<std::size_t>(2, rows.rows.size()));
  }
  EXPECT_GT(appended, 0u);  // the ranker does not always rank the heuristic's top-1 high
}

// The timed shortlist keeps the heuristic's top-1 unless another is measured more than
// kShortlistMargin faster; without it in the list, the fastest.
TEST(GemmRanker, ShortlistWinnerKeepsTheHeuristicWithinTheMargin) {
  const double h = 100.0;
  const double close = h * (1.0 - kShortlistMargin) + 0.01, clear = h * (1.0 - kShortlistMargin) - 0.01;
  EXPECT_EQ(shortlist_winner({close, 120.0, h}, 2), 2u);
  EXPECT_EQ(shortlist_winner({120.0, clear, h}, 2), 1u);
  EXPECT_EQ(shortlist_winner({h, 120.0, close}, 0), 0u);
  EXPECT_EQ(shortlist_winner({120.0, close, 130.0}, -1), 1u);
  EXPECT_EQ(shortlist_winner({h}, 0), 0u);
  EXPECT_THROW(shortlist_winner({}, -1), InternalError);
}

// A record written before the returned structs were timed one by one: the heuristic's top-1
// is a candidate twice, rebuilt from its key (the enumeration's time) and as the library
// returned it (the heuristic's own time), as the engine offers it.
TEST(GemmRankerFeatures, TheHeuristicsTopOneIsACandidateAsReturnedBesideItsRebuiltTwin) {
  const Hardware hw = test::shipped_hardware("h200_sxm");
  const GemmOracle oracle = load_gemm_oracle(kOracle);
  std::map<std::string, const OracleShape*> by_id;
  for (const OracleShape& o : oracle.shapes) by_id[o.id] = &o;
  std::size_t differing = 0;
  for (const RankerShape& s : ranker_shapes(hw, oracle)) {
    const OracleShape& o = *by_id.at(s.id);
    ASSERT_TRUE(o.returned.empty()) << "the test needs a record of the older schema";
    ASSERT_GE(s.heuristic_candidate, 0) << s.id;
    const auto h = static_cast<std::size_t>(s.heuristic_candidate);
    EXPECT_EQ(h, s.candidates.size() - 1) << s.id;
    EXPECT_TRUE(s.candidates[h].returned) << s.id;
    EXPECT_EQ(s.candidates[h].list_rank, 0) << s.id;
    EXPECT_EQ(s.candidates[h].key, o.heuristic_key) << s.id;
    EXPECT_EQ(s.measured_us[h], o.heuristic_median_us) << s.id;
    std::size_t twins = 0;
    for (std::size_t i = 0; i < h; ++i) {
      EXPECT_FALSE(s.candidates[i].returned) << s.id;
      if (s.candidates[i].key != o.heuristic_key) continue;
      ++twins;
      EXPECT_EQ(s.candidates[i].list_rank, 0) << s.id;
      if (s.measured_us[i] != s.measured_us[h]) ++differing;
    }
    EXPECT_EQ(twins, 1u) << s.id;
  }
  EXPECT_GT(differing, 100u);  // rebuilt and returned structs are timed apart, and differ
}

TEST(GemmRankerFeatures, MalformedKeyIsAnError) {
  const Hardware hw = test::shipped_hardware("h200_sxm");
  GemmProblem p;
  p.m = p.n = p.k = 256;
  RankerCandidate c;
  c.key = "a1.t2.s3";
  c.config.tile_m = c.config.tile_n = 64;
  const std::string e =
      expect_config_error([&] { (void)gemm_ranker_rows(hw, test::shipped_params(hw), p, {c}); });
  EXPECT_NE(e.find("a1.t2.s3"), std::string::npos) << e;
}

}  // namespace
}  // namespace hetrec
