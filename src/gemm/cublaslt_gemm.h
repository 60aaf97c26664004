#pragma once
// GEMMs on NVIDIA (and, through the gpu/blaslt.h shim, AMD) GPUs via cuBLASLt, in the
// row-major language of the rest of hetrec, with the fused epilogues the dense layers
// need. Matrices are row-major; lda/ldb/ldc are row strides in elements, as in
// gemm/cpu_blas.h:
//   D (m x n) = alpha * op(A) (m x k) * op(B) (k x n) [+ beta * D] [epilogue]
// Internally the problem is handed to cuBLASLt transposed (D^T = op(B)^T op(A)^T), the
// usual way to run a row-major product on a column-major library.
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "gemm/cublaslt_problem.h"
#include "hw/hardware.h"
#include "gemm_perf/gemm_model_params.h"
#include "gemm_perf/gemm_selection_cache.h"

namespace hetrec::inline gemm::cublaslt {

struct AlgoConfig;  // gemm/cublaslt_algo_ids.h

// One cuBLASLt handle with its workspace and a cache of per-problem plans (descriptors
// and the selected algorithm), so a training step never queries the heuristic twice for
// one shape. Not thread-safe; a workspace serves one stream at a time: GEMMs that run
// beside the others on a second stream use the side lane's workspace (Lane::side).
class Gemm {
 public:
  // 32 MiB: the workspace cuBLAS's documentation recommends for Hopper.
  static constexpr std::size_t kDefaultWorkspaceBytes = std::size_t{32} << 20;

  explicit Gemm(Allocator& device_allocator, std::size_t workspace_bytes = kDefaultWorkspaceBytes);

  // Which workspace a GEMM uses: the main one, or the side lane's (of the same size, so
  // every plan runs on either) for GEMMs enqueued on a second stream.
  enum class Lane { main, side };
  // Allocates the side lane's workspace (a no-op when it exists).
  void add_side_lane(Allocator& device_allocator);
  bool has_side_lane() const { return side_workspace_.defined() || !workspace_.defined(); }
  ~Gemm();
  Gemm(const Gemm&) = delete;
  Gemm& operator=(const Gemm&) = delete;

  // From now on, each new problem runs the configuration the analytical model predicts
  // fastest among those cuBLASLt offers (gemm/cublaslt_model_choice.h), and the library
  // heuristic's choice only where the model can describe none of them. CUDA builds only
  // (ConfigError elsewhere).
  // cache_path (optional): the selections file (gemm_perf/gemm_selection_cache.h), validated by
  // the GPU, driver, runtime, cuBLASLt version and the parameters' fingerprint. A problem
  // found there runs its recorded configuration once cuBLASLt accepts it for the operands at
  // hand (no enumeration, no prediction); every new choice is added and the file rewritten.
  // ranker (optional): the learned ranker of this GPU, driver and cuBLASLt (gemm_perf/gemm_ranker.h);
  // its router then chooses (gemm/cublaslt_model_choice.h), and `ranker_id` (its file's name
  // and checksum) joins the selections file's validators.
  // timed_shortlist (with a ranker): time the ranker's this many best-scored configurations
  // and the heuristic's top-1 at a new problem's first run outside graph capture, and run
  // the fastest (gemm/cublaslt_shortlist_timing.h); it joins the selections file's validators.
  // 0: the router's pick, untimed.
  void use_model_selection(Hardware hw, GemmModelParams params, std::string cache_path = "",
                           std::shared_ptr<const GemmRanker> ranker = nullptr, const std::string& ranker_id = "",
                           int timed_shortlist = 0);

  // Whether the one-time choices between runners of a new problem are timed on the device
  // (model selection with a timed shortlist): the MLPs then time their small-GEMM kernels
  // against cuBLASLt as well (model/gpu/small_gemm_choice.h).
  bool times_candidates() const;

  // How the algorithms of the problems planned so far were chosen.
  struct SelectionCounts {
    std::size_t by_model = 0;
    std::size_t by_library = 0;   // the heuristic's choice
    double predicted_us = 0.0;    // the model's predictions summed over its choices
    std::size_t from_cache = 0;   // of by_model, choices read from the selections file
    std::size_t learned = 0;      // of by_model, the learned ranker's picks (not from the file)
    std::size_t as_returned = 0;  // of by_model, the heuristic's listed structs run as it returned them
    std::size_t timed = 0;        // of by_model, problems whose shortlist was timed
    std::size_t timed_other = 0;  // of those, ones that kept a configuration other than the router's pick
    std::string ranker;           // the learned ranker in use (its file's name and checksum), "" for none
  };
  const SelectionCounts& selection_counts() const { return counts_; }

  // Whether an algorithm exists for the problem with 256-byte-aligned operands.
  bool supported(const Problem& problem);
  // With model selection: the model's predicted time (us) of the configuration the problem
  // runs with these operands (planned now if new, as run() would). nullopt without model
  // selection, or where the library's heuristic chose because the model could describe
  // none of the configurations.
  std::optional<double> predicted_us(const Problem& problem, const Operands& operands);
  // Throws DeviceError naming the shape when no algorithm exists or the call fails, and
  // InternalError for Lane::side without add_side_lane.
  void run(const Problem& problem, const Operands& operands, gpu::stream_t stream, Lane lane = Lane::main);

  // Per-call device times: while timing is on, run() records a timing event on the call's
  // stream before and after the matmul (never while a graph is being captured: timed
  // steps run eagerly). begin_timing() starts a new record (switching timing on);
  // timings() waits for the recorded calls and returns them in call order.
  struct Timing {
    std::string shape;        // shape_text(problem)
    double flops = 0.0;       // 2 m n k
    bool accumulates = false;  // beta != 0: D is read as well as written
    double ms = 0.0;
  };
  void begin_timing();
  void stop_timing();
  std::vector<Timing> timings() const;

 private:
  struct Plan;
  using Key = std::tuple<bool, bool, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int, int, int, int, int,
                         int, int, int, int>;
  Plan& plan(const Problem& problem, const Alignment& alignment);
  // A plan with a shortlist still to time: times it on the call's operands and stream and
  // keeps shortlist_winner's pick (a no-op while the stream is being captured).
  void settle_shortlist(Plan& pl, const Problem& problem, const Operands& operands, gpu::stream_t stream,
                        const Tensor& workspace);
  // The choice of a problem joins the selections file (when there is one).
  // `list_rank` >= 0: the heuristic's listed struct, run as returned.
  void keep_choice(const Problem& problem, const AlgoConfig& algo, const GemmConfig& config, double predicted_us,
                   int list_rank);
  static Key key_of(const Problem& p, const Alignment& al);

  struct Timer;  // the events of the timed calls (cublaslt_gemm.cpp)
  std::unique_ptr<Timer> timer_;
  cublasLtHandle_t handle_ = nullptr;
  Allocator* allocator_ = nullptr;  // the device allocator the workspaces (and a timing's scratch D) come from
  Tensor workspace_;
  Tensor side_workspace_;  // Lane::side
  std::map<Key, std::unique_ptr<Plan>> plans_;
  // The model's choice for a new problem (from the selections file when it holds one).
  // `predicted_us` receives the model's prediction of the configuration returned.
  // With a timed shortlist the plan also gets the configurations to time at its first run.
  void model_choice(const Problem& problem, std::size_t workspace_bytes, const Alignment& alignment, Plan& pl);

  std::unique_ptr<const ModelSelection> model_selection_;
  std::unique_ptr<GemmSelectionCache> selection_cache_;
  std::string selection_cache_path_;
  SelectionCounts counts_;
};

}  // namespace hetrec::gemm::cublaslt
