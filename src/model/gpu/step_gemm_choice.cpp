#include "model/gpu/step_gemm_choice.h"

#include <memory>

#include "core/install_paths.h"
#include "gemm/device_probe.h"
#include "gemm_perf/gemm_ranker.h"
#if defined(HETREC_WITH_CUDA)
#include "gemm/cublaslt_model_choice.h"
#endif
#include "model/gpu/model_small_gemms.h"

namespace hetrec::inline model::gpu_model {

StepGemmChoice::StepGemmChoice(const ModelConfig& model, int device, const gpu::DeviceProperties& props,
                               cublaslt::Gemm& gemm)
    : model_(model), props_(props) {
  if (model.gemm_selection != GemmSelection::model) return;
  const std::string dir = default_hardware_dir();
  Hardware hw = model.gemm_hardware.empty() ? hardware_for_device(props_.name, dir, "model.gemm_hardware")
                                            : load_hardware_by_name(model.gemm_hardware, dir);
  GemmModelParams params =
      model.gemm_params.empty() ? load_gemm_params_for(hw, dir + "/params") : load_gemm_params(model.gemm_params);
  const std::string cache = model.gemm_cache == "none" ? std::string()
                            : model.gemm_cache.empty()
                                ? default_cache_path("gemm-selections-" + std::to_string(device) + ".txt")
                                : model.gemm_cache;
  model_selection_.emplace(hw, params);
#if defined(HETREC_WITH_CUDA)
  // The learned ranker trained for this GPU, driver and cuBLASLt (model.gemm_ranker): its
  // router chooses where it is reliable, the heuristic's top-1 elsewhere.
  const GemmRankerValidators validators = cublaslt::local_ranker_validators(device);
  const std::string ranker_file = choose_gemm_ranker_file(model.gemm_ranker, data_dir() + "/gemm/rankers", validators);
  std::shared_ptr<const GemmRanker> ranker;
  if (!ranker_file.empty()) ranker = load_gemm_ranker(ranker_file, validators);
  gemm.use_model_selection(std::move(hw), std::move(params), cache, ranker,
                           ranker ? gemm_ranker_id(ranker_file) : std::string(), model.gemm_timed_shortlist);
#else
  gemm.use_model_selection(std::move(hw), std::move(params), cache);  // refuses: the model needs CUDA
#endif
}

std::vector<tune::SmallGemmLayerGemm> StepGemmChoice::narrow_gemms(const GpuMlp& mlp, bool bottom_mlp) const {
  std::vector<tune::SmallGemmLayerGemm> gemms =
      bottom_mlp ? tune::small_gemm_mlp_gemms("bottom_mlp", model_.num_dense, model_.bottom_mlp, true, false,
                                              DType::f32)
                 : tune::small_gemm_mlp_gemms("top_mlp", model_.interaction_width(), model_.top_mlp, false, true,
                                              DType::f32);
  std::erase_if(gemms, [&](const tune::SmallGemmLayerGemm& g) { return mlp.layer_16bit(g.layer); });
  return gemms;
}

void StepGemmChoice::load_small_gemms(const std::string& winners_file, GpuMlp& bottom, GpuMlp& top) {
  // The narrow layers' GEMMs with a tuned small-GEMM winner; with the model's selection,
  // the others join at choose_small_gemms, when the batch is known.
  small_gemms_ = load_tuned_small_gemms(winners_file, props_, narrow_gemms(bottom, true), narrow_gemms(top, false));
  bottom.use_small_gemms(small_gemms_.bottom);
  top.use_small_gemms(small_gemms_.top);
}

void StepGemmChoice::choose_small_gemms(int64_t batch, bool model_small_gemms, GpuMlp& bottom, GpuMlp& top) {
  if (!model_selection_ || small_gemms_by_model_ || !model_small_gemms) return;
  small_gemms_ = choose_small_gemms_by_model(model_selection_->first, model_selection_->second, props_,
                                             narrow_gemms(bottom, true), narrow_gemms(top, false), batch,
                                             std::move(small_gemms_));
  bottom.use_small_gemms(small_gemms_.bottom);
  top.use_small_gemms(small_gemms_.top);
  small_gemms_by_model_ = true;
}

}  // namespace hetrec::model::gpu_model
