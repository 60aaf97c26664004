#pragma once
// How the GPU engine's GEMMs are chosen. By default cuBLASLt's heuristic chooses every
// cuBLASLt GEMM. With model.gemm_selection = "model" the analytical model chooses instead,
// for this GPU's description (model.gemm_hardware, or the one matching the device name)
// with model.gemm_params (or the shipped parameters of its architecture), and the learned
// ranker trained for this GPU, driver and cuBLASLt (model.gemm_ranker) where it is
// reliable (gemm/cublaslt_gemm.h). Either way the MLPs' narrow fp32 layers run the tuned
// small-GEMM winners of the winners file (model/gpu/tuned_small_gemms.h); with the model's
// selection every such GEMM also gets the small-GEMM kernels as candidates once the batch
// is known (model/gpu/model_small_gemms.h).
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gemm/cublaslt_gemm.h"
#include "gemm_perf/gemm_model_params.h"
#include "gpu/device.h"
#include "hw/hardware.h"
#include "model/gpu/gpu_mlp.h"
#include "model/gpu/tuned_small_gemms.h"
#include "model/model_config.h"

namespace hetrec::inline model::gpu_model {

class StepGemmChoice {
 public:
  // With the model's selection, sets `gemm` to choose by it (ConfigError for a hardware
  // description or parameters file that cannot be found or read). `device`: the index the
  // selections cache is named after.
  StepGemmChoice(const ModelConfig& model, int device, const gpu::DeviceProperties& props, cublaslt::Gemm& gemm);

  // The MLPs' narrow layers that run a tuned small-GEMM winner of `winners_file` (empty:
  // none). The MLPs keep pointers to the kernels this object holds.
  void load_small_gemms(const std::string& winners_file, GpuMlp& bottom, GpuMlp& top);
  // At the first batch the step buffers are sized for (with the model's selection and
  // `model_small_gemms`): the small-GEMM kernels become candidates of every narrow fp32 GEMM.
  void choose_small_gemms(int64_t batch, bool model_small_gemms, GpuMlp& bottom, GpuMlp& top);
  // "small-GEMM kernels in ..." for the engine's description; empty when none.
  const std::string& note() const { return small_gemms_.note; }

 private:
  // The GEMMs of the bottom (or top) MLP's narrow layers that the small-GEMM kernels can
  // run: fp32 layers only (a 16-bit layer stays on cuBLASLt); the bottom MLP has no input
  // gradient.
  std::vector<tune::SmallGemmLayerGemm> narrow_gemms(const GpuMlp& mlp, bool bottom_mlp) const;

  ModelConfig model_;
  gpu::DeviceProperties props_;
  TunedSmallGemms small_gemms_;
  // The model's selection: the GPU's description and the model's parameters.
  std::optional<std::pair<Hardware, GemmModelParams>> model_selection_;
  bool small_gemms_by_model_ = false;  // the model's small-GEMM candidates are in place
};

}  // namespace hetrec::model::gpu_model
