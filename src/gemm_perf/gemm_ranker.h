#pragma once
// The learned GEMM ranker: an XGBoost model trained offline (tools/train_gemm_ranker.py) on
// an oracle corpus (`hetrec gemm bench`), scoring each candidate configuration of a GEMM by
// its features (gemm_perf/gemm_ranker_features.h); lower is faster. It is loaded from its data
// file through XGBoost's C API and refuses a file made for another GPU, driver or cuBLASLt.
// The router takes the ranker's pick where the ranker is reliable (kernels the analytical
// model predicts short) and cuBLASLt's heuristic top-1, as the library returned it,
// elsewhere (docs/gemm_selection.md, "The learned ranker").
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gemm_perf/gemm_ranker_features.h"

namespace hetrec::inline gemm_perf {

// What a ranker file was trained for; load_gemm_ranker compares each non-empty field of the
// caller's with the file's.
struct GemmRankerValidators {
  std::string gpu, driver, cublaslt_version, corpus_sha256;
};

class GemmRanker {
 public:
  GemmRanker(const GemmRanker&) = delete;
  GemmRanker& operator=(const GemmRanker&) = delete;
  ~GemmRanker();

  // Scores of the rows (lower: predicted faster relative to the shape's best).
  std::vector<float> score(const std::vector<GemmRankerRow>& rows) const;

  const GemmRankerValidators& trained_for() const { return trained_for_; }
  double short_kernel_us() const { return short_kernel_us_; }

  // A ranker file's models: "model" (all families) or the held-out fold models (index,
  // with the families each was not trained on).
  friend std::unique_ptr<GemmRanker> load_gemm_ranker(const std::string& path, const GemmRankerValidators& device,
                                                      int fold);

 private:
  GemmRanker() = default;
  void* booster_ = nullptr;  // BoosterHandle
  GemmRankerValidators trained_for_;
  double short_kernel_us_ = 0.0;
};

// fold -1: the model trained on every family; fold i: the model trained without the
// families of fold i. Throws IoError when the file cannot be read and ConfigError naming the
// file and key when it is malformed, when a validator differs from `device` (naming both
// values) or when its feature list is not this build's.
std::unique_ptr<GemmRanker> load_gemm_ranker(const std::string& path, const GemmRankerValidators& device,
                                             int fold = -1);

// What a ranker file was trained for (its $.validators), without loading its models.
GemmRankerValidators gemm_ranker_trained_for(const std::string& path);

// The ranker file a run uses, from model.gemm_ranker (`setting`): "none" for no ranker; a
// file's path, which must have been trained for `device` (ConfigError naming
// model.gemm_ranker and both values otherwise); or "" for the first file of `dir` in name
// order (*.json.xz, *.json) trained for `device` (each of its non-empty fields equal), none
// when no file there is. Returns the path, "" for no ranker.
std::string choose_gemm_ranker_file(const std::string& setting, const std::string& dir,
                                    const GemmRankerValidators& device);

// A ranker file's identity for the selections file's validators: its name and CRC-32C.
std::string gemm_ranker_id(const std::string& path);

// The families each fold of a ranker file held out (fold i's model never saw them).
std::vector<std::vector<std::string>> gemm_ranker_folds(const std::string& path);

// The router's pick for one problem: the ranker's best-scored candidate when the analytical
// model predicts the heuristic's top-1 (`heuristic`, an index into the candidates; -1 when
// none is described) under short_kernel_us, else the heuristic's top-1. `candidate` -1 means
// "the heuristic's top-1 as the library returned it".
struct RankerPick {
  int candidate = -1;
  bool learned = false;  // the ranker chose (else the heuristic's top-1)
  int ranker_best = -1;  // the ranker's own best-scored candidate
};
RankerPick route_gemm_choice(const GemmRanker& ranker, const RankerRows& rows, int heuristic);

// The timed shortlist of one problem: the candidates (indices, as rows.candidate holds them)
// of the ranker's k best-scored rows in score order (ties in row order), then the heuristic's
// top-1 (`heuristic`, -1 when not described) where it is not among them. What the engine
// times once per new problem under model.gemm_timed_shortlist = k, and what
// evaluate_ranker_held_out's shortlist figures take the fastest of.
std::vector<int> ranker_shortlist(const GemmRanker& ranker, const RankerRows& rows, int heuristic, int k);
// The same from the rows' scores (GemmRanker::score), for callers that take several lengths.
std::vector<int> ranker_shortlist(const std::vector<float>& score, const RankerRows& rows, int heuristic, int k);

// The configuration a timed shortlist keeps, from its measured times (microseconds, in the
// shortlist's order) and the heuristic's top-1's place in it (-1: not in it): the fastest,
// unless the heuristic's top-1 measured within kShortlistMargin of it, when the heuristic's
// top-1 stays. A few launches timed once, apart from the step, do not reliably separate
// configurations that close, so a switch away from the library's pick needs a larger
// measured gain (the held-out figures lose 0.002 of geomean to it, docs/gemm_selection.md).
inline constexpr double kShortlistMargin = 0.02;
std::size_t shortlist_winner(const std::vector<double>& us, int heuristic);

// The router for one problem from its candidates: when the heuristic's top-1 is described
// and predicted at least short_kernel_us, that alone is predicted and the heuristic's top-1
// kept (no features, no scoring); otherwise gemm_ranker_rows and route_gemm_choice.
RankerPick select_gemm_by_ranker(const GemmRanker& ranker, const Hardware& hw, const GemmModelParams& params,
                                 const GemmProblem& problem, const std::vector<RankerCandidate>& candidates,
                                 int heuristic);

// A timed shortlist: per shape what shortlist_winner keeps of the ranker's k best-scored
// candidates and the heuristic's top-1 as returned, their oracle times standing for the
// engine's timing: what timing those k + 1 once per new shape would choose.
struct ShortlistFigures {
  int k = 0;
  double geomean = 0, p5 = 0, time_weighted = 0;
};
inline constexpr int kShortlistSizes[] = {1, 2, 3, 5, 8};

// Held-out figures of a selection over oracle shapes: per shape oracle / chosen time.
struct RankerEvaluation {
  std::size_t shapes = 0;
  double ranker_geomean = 0, ranker_p5 = 0, ranker_time_weighted = 0;      // the ranker alone
  double routed_geomean = 0, routed_p5 = 0, routed_time_weighted = 0;      // the router
  double heuristic_geomean = 0, heuristic_p5 = 0, heuristic_time_weighted = 0;
  std::size_t routed_learned = 0;  // shapes where the router took the ranker's pick
  std::vector<ShortlistFigures> shortlist;  // one per kShortlistSizes
};

// Every shape predicted once by the fold model that did not see its family (a family in no
// fold is an error naming it).
RankerEvaluation evaluate_ranker_held_out(const std::string& ranker_path, const GemmRankerValidators& device,
                                          const Hardware& hw, const GemmModelParams& params,
                                          const std::vector<RankerShape>& shapes);

}  // namespace hetrec::gemm_perf::gemm_perf
