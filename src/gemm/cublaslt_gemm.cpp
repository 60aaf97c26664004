// Compiled into hetrec_gemm only with a GPU backend (the CPU build sees an empty file).
#if defined(HETREC_WITH_GPU)
#include "gemm/cublaslt_gemm.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "core/error.h"
#include "core/log.h"
#include "gpu/event.h"
#if defined(HETREC_WITH_CUDA)
#include "gemm/cublaslt_algo_ids.h"
#include "gemm/cublaslt_algos.h"
#include "gemm/cublaslt_model_choice.h"
#include "gemm/cublaslt_shortlist_timing.h"
#include "gemm/device_validators.h"
#include "gpu/device.h"
#endif

namespace hetrec::inline gemm::cublaslt {

#if defined(HETREC_WITH_CUDA)
namespace {
// A selections-file entry of a configuration from the heuristic's list, run as returned.
constexpr std::string_view kReturnedSuffix = "@returned";
}  // namespace
#endif

struct Gemm::Plan {
  std::unique_ptr<MatmulDescriptors> desc;
  std::optional<cublasLtMatmulAlgo_t> algo;
  std::optional<double> predicted_us;  // the model's, when it chose the algorithm
#if defined(HETREC_WITH_CUDA)
  // The timed shortlist not yet timed (model selection with timed_shortlist > 0); `algo`
  // is the router's pick until it is.
  std::vector<ShortlistEntry> shortlist;
  int pick_list_rank = -1;  // the router's pick's ModelChoice::list_rank
#endif
};

struct Gemm::Timer {
  struct Call {
    gpu::Event start, stop;
    Timing timing;
  };
  std::vector<Call> calls;  // kept across records so the events are created once
  std::size_t used = 0;
  bool on = false;
};

Gemm::Gemm(Allocator& device_allocator, std::size_t workspace_bytes) : allocator_(&device_allocator) {
  HETREC_BLAS_CHECK(cublasLtCreate(&handle_));
  if (workspace_bytes > 0)
    workspace_ = Tensor::empty({static_cast<int64_t>(workspace_bytes)}, DType::u8, device_allocator);
}

void Gemm::add_side_lane(Allocator& device_allocator) {
  if (has_side_lane()) return;
  side_workspace_ = Tensor::empty({static_cast<int64_t>(workspace_.nbytes())}, DType::u8, device_allocator);
}

Gemm::~Gemm() {
  plans_.clear();
  if (handle_) (void)cublasLtDestroy(handle_);
}

Gemm::Key Gemm::key_of(const Problem& p, const Alignment& al) {
  return Key{p.trans_a, p.trans_b, p.m, p.n, p.k, p.lda, p.ldb, p.ldd, static_cast<int>(p.d_type),
             static_cast<int>(p.precision), static_cast<int>(p.epilogue), al.a, al.b, al.d, al.aux, al.bias,
             static_cast<int>(p.bias_type)};
}

Gemm::Plan& Gemm::plan(const Problem& p, const Alignment& al) {
  const Key key = key_of(p, al);
  auto it = plans_.find(key);
  if (it != plans_.end()) return *it->second;
  auto plan = std::make_unique<Plan>();
  plan->desc = make_descriptors(p);
  const std::size_t workspace_bytes = workspace_.defined() ? workspace_.nbytes() : 0;
#if defined(HETREC_WITH_CUDA)
  if (model_selection_) model_choice(p, workspace_bytes, al, *plan);
#endif
  if (!plan->algo) {
    plan->algo = select_algo(handle_, plan->desc->desc, plan->desc->a, plan->desc->b, plan->desc->d, workspace_bytes, al,
                             p.d_type != DType::f32);
    if (plan->algo) ++counts_.by_library;
  }
  Plan& ref = *plan;
  plans_.emplace(key, std::move(plan));
  return ref;
}

#if defined(HETREC_WITH_CUDA)
void Gemm::model_choice(const Problem& p, std::size_t workspace_bytes, const Alignment& al, Plan& pl) {
  const MatmulDescriptors& desc = *pl.desc;
  const GemmProblem key = model_problem(p);
  // The model prices the backward epilogues as their forward forms: the library's epilogue
  // tells such problems apart in the file.
  const int variant = static_cast<int>(p.epilogue) + 1;
  if (selection_cache_) {
    if (const auto hit = selection_cache_->find(key, variant); hit && !hit->vendor_config.empty()) {
      // "<key>@returned": one of the heuristic's listed structs, run as the library returns it
      // (a struct rebuilt from the key may run another kernel), so the list is asked again.
      const std::string_view recorded = hit->vendor_config;
      const bool returned = recorded.ends_with(kReturnedSuffix);
      if (const auto config = parse_algo_key(returned ? recorded.substr(0, recorded.size() - kReturnedSuffix.size())
                                                      : recorded)) {
        std::optional<EnumeratedAlgo> algo;
        if (returned) {
          for (const cublasLtMatmulAlgo_t& a : heuristic_algos(handle_, desc.desc, desc.a, desc.b, desc.d,
                                                               workspace_bytes, al, p.d_type != DType::f32,
                                                               kHeuristicConfigs))
            if (read_algo_config(a) == *config) {
              algo = check_algo(handle_, desc, a, workspace_bytes);
              break;
            }
        } else {
          algo = check_config(handle_, p, desc, *config, workspace_bytes);
        }
        if (algo && algo_allowed(*algo, p, al)) {
          ++counts_.by_model;
          ++counts_.from_cache;
          if (returned) ++counts_.as_returned;
          counts_.predicted_us += hit->predicted_us;
          pl.predicted_us = hit->predicted_us;
          pl.algo = algo->algo;
          return;
        }
      }
    }
  }
  auto choice = choose_algo_by_model(handle_, p, desc, workspace_bytes, al, *model_selection_);
  if (!choice) return;
  ++counts_.by_model;
  if (choice->learned) ++counts_.learned;
  if (choice->list_rank >= 0) ++counts_.as_returned;
  counts_.predicted_us += choice->predicted_us;
  pl.predicted_us = choice->predicted_us;
  pl.algo = choice->algo.algo;
  // A shortlist of one has nothing to choose between.
  if (choice->shortlist.size() > 1) {
    pl.shortlist = std::move(choice->shortlist);
    pl.pick_list_rank = choice->list_rank;
    return;  // kept once timed
  }
  keep_choice(p, choice->algo.config, choice->config, choice->predicted_us, choice->list_rank);
}

void Gemm::keep_choice(const Problem& p, const AlgoConfig& algo, const GemmConfig& config, double predicted_us,
                       int list_rank) {
  if (!selection_cache_) return;
  // A listed struct is recorded as "<key>@returned": found again in the list, not rebuilt.
  const std::string recorded = algo_key(algo) + (list_rank >= 0 ? std::string(kReturnedSuffix) : "");
  selection_cache_->insert(model_problem(p), CachedGemmChoice{config, predicted_us, recorded},
                           static_cast<int>(p.epilogue) + 1);
  try {
    std::filesystem::create_directories(std::filesystem::path(selection_cache_path_).parent_path());
    selection_cache_->save(selection_cache_path_);
  } catch (const std::exception& e) {
    // The run goes on without the file: it saves selection time, never correctness.
    Logger{}.warn(std::string("GEMM selections are not kept: ") + e.what());
    selection_cache_.reset();
  }
}

void Gemm::settle_shortlist(Plan& pl, const Problem& p, const Operands& o, gpu::stream_t stream,
                            const Tensor& workspace) {
  std::vector<cublasLtMatmulAlgo_t> algos;
  for (const ShortlistEntry& e : pl.shortlist) algos.push_back(e.algo.algo);
  const auto us = time_shortlist(handle_, p, *pl.desc, o, algos, workspace.defined() ? workspace.raw() : nullptr,
                                 workspace.defined() ? workspace.nbytes() : 0, stream, *allocator_);
  if (!us) return;  // timed at a later run
  // The heuristic's top-1 as returned, kept unless another is measured clearly faster.
  int heuristic = -1;
  for (std::size_t i = 0; i < pl.shortlist.size(); ++i)
    if (pl.shortlist[i].list_rank == 0) heuristic = static_cast<int>(i);
  const ShortlistEntry& e = pl.shortlist[shortlist_winner(*us, heuristic)];
  ++counts_.timed;
  if (!same_algo(e.algo.algo, *pl.algo)) ++counts_.timed_other;
  // The router's pick was counted when chosen; the fastest replaces it, as recorded.
  if (pl.pick_list_rank >= 0) --counts_.as_returned;
  if (e.list_rank >= 0) ++counts_.as_returned;
  counts_.predicted_us += e.predicted_us - pl.predicted_us.value_or(0.0);
  pl.algo = e.algo.algo;
  pl.predicted_us = e.predicted_us;
  keep_choice(p, e.algo.config, e.config, e.predicted_us, e.list_rank);
  pl.shortlist.clear();
}
#endif

void Gemm::use_model_selection(Hardware hw, GemmModelParams params, std::string cache_path,
                               std::shared_ptr<const GemmRanker> ranker, const std::string& ranker_id,
                               int timed_shortlist) {
#if defined(HETREC_WITH_CUDA)
  if (timed_shortlist < 0) throw ConfigError("model.gemm_timed_shortlist: expected 0 or more, got " +
                                             std::to_string(timed_shortlist));
  ModelSelection selection = make_model_selection(handle_, std::move(hw), std::move(params));
  selection.ranker = std::move(ranker);
  // Timing chooses among the ranker's best-scored configurations: without a ranker, none.
  selection.timed_shortlist = selection.ranker ? timed_shortlist : 0;
  model_selection_ = std::make_unique<const ModelSelection>(std::move(selection));
  counts_.ranker = model_selection_->ranker ? ranker_id : std::string();
  if (!cache_path.empty()) {
    const ProbeValidators v = local_probe_validators(gpu::current_device());
    GemmCacheValidators validators = make_gemm_cache_validators(v.gpu, v.driver, v.blas_library, model_selection_->params);
    validators.items.emplace_back("runtime", v.runtime);
    validators.items.emplace_back("ranker", model_selection_->ranker ? ranker_id : std::string("none"));
    // Choices timed among a shortlist are not the untimed router's, nor another length's.
    validators.items.emplace_back("timed_shortlist", std::to_string(model_selection_->timed_shortlist));
    selection_cache_ = std::make_unique<GemmSelectionCache>(GemmSelectionCache::load(cache_path, validators, Logger{}));
    selection_cache_path_ = std::move(cache_path);
  }
#else
  (void)hw;
  (void)params;
  (void)cache_path;
  (void)ranker;
  (void)ranker_id;
  (void)timed_shortlist;
  throw ConfigError("GEMM selection by the model needs cuBLASLt's configuration enumeration (a CUDA build)");
#endif
}

bool Gemm::times_candidates() const {
#if defined(HETREC_WITH_CUDA)
  return model_selection_ && model_selection_->timed_shortlist > 0;
#else
  return false;
#endif
}

bool Gemm::supported(const Problem& problem) { return plan(problem, Alignment{}).algo.has_value(); }

std::optional<double> Gemm::predicted_us(const Problem& problem, const Operands& operands) {
  return plan(problem, operand_alignment(problem, operands)).predicted_us;
}

void Gemm::run(const Problem& p, const Operands& o, gpu::stream_t stream, Lane lane) {
  Plan& pl = plan(p, operand_alignment(p, o));
  if (!pl.algo) throw DeviceError("cuBLASLt has no algorithm for " + shape_text(p));
  if (lane == Lane::side && !has_side_lane()) throw InternalError("cublaslt::Gemm: the side lane was not added");
  const Tensor& workspace = lane == Lane::side ? side_workspace_ : workspace_;
#if defined(HETREC_WITH_CUDA)
  if (!pl.shortlist.empty()) settle_shortlist(pl, p, o, stream, workspace);
#endif
  set_operand_pointers(p, o, pl.desc->desc);
  void* ws = workspace.defined() ? workspace.raw() : nullptr;
  const std::size_t ws_bytes = workspace.defined() ? workspace.nbytes() : 0;
  Timer::Call* timed = nullptr;
  if (timer_ && timer_->on) {
    if (timer_->used == timer_->calls.size()) timer_->calls.emplace_back();
    timed = &timer_->calls[timer_->used++];
    timed->timing = {shape_text(p), 2.0 * static_cast<double>(p.m) * static_cast<double>(p.n) * static_cast<double>(p.k),
                     o.beta != 0.0f, 0.0};
    timed->start.record(stream);
  }
  HETREC_BLAS_CHECK(cublasLtMatmul(handle_, pl.desc->desc, &o.alpha, o.b, pl.desc->a, o.a, pl.desc->b, &o.beta, o.d,
                                   pl.desc->d, o.d, pl.desc->d, &*pl.algo, ws, ws_bytes, stream));
  if (timed) timed->stop.record(stream);
}

void Gemm::begin_timing() {
  if (!timer_) timer_ = std::make_unique<Timer>();
  timer_->used = 0;
  timer_->on = true;
}

void Gemm::stop_timing() {
  if (timer_) timer_->on = false;
}

std::vector<Gemm::Timing> Gemm::timings() const {
  std::vector<Timing> out;
  if (!timer_) return out;
  for (std::size_t i = 0; i < timer_->used; ++i) {
    const Timer::Call& c = timer_->calls[i];
    c.stop.synchronize();
    out.push_back(c.timing);
    out.back().ms = gpu::Event::elapsed_ms(c.start, c.stop);
  }
  return out;
}

}  // namespace hetrec::gemm::cublaslt
#endif  // HETREC_WITH_GPU
