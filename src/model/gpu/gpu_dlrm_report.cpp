// What the GPU engine reports: its description, device memory, loss scale and
// small-GEMM decisions.
#include <string>
#include <vector>

#include "core/error.h"
#include "model/describe.h"
#include "model/gpu/dense_network.h"
#include "model/gpu/gpu_dlrm_engine.h"

namespace hetrec::inline model::gpu_model {

std::vector<gpu_model::SmallGemmDecision> GpuDlrm::small_gemm_decisions() const {
  std::vector<gpu_model::SmallGemmDecision> out = bottom_->small_gemm_decisions("bottom_mlp");
  for (auto& d : top_->small_gemm_decisions("top_mlp")) out.push_back(std::move(d));
  return out;
}

double GpuDlrm::loss_scale() const {
  if (!loss_scale_.defined()) return 1.0;
  kernels::LossScaleState st;
  gpu::memcpy_sync(&st, loss_scale_.raw(), sizeof(st), gpu::CopyKind::device_to_host);
  return st.scale;
}

std::optional<DeviceMemoryReport> GpuDlrm::device_memory() const {
  const gpu::AllocatorStats a = alloc_.stats();
  const gpu::MemoryInfo now = gpu::memory_info();
  DeviceMemoryReport r;
  r.allocator_peak_bytes = static_cast<int64_t>(a.peak_bytes_in_use);
  r.allocator_reserved_bytes = static_cast<int64_t>(a.bytes_reserved);
  r.device_used_at_start_bytes = static_cast<int64_t>(memory_at_start_.total_bytes - memory_at_start_.free_bytes);
  r.device_used_bytes = static_cast<int64_t>(now.total_bytes - now.free_bytes);
  r.device_total_bytes = static_cast<int64_t>(now.total_bytes);
  r.outside_allocator_bytes = r.device_used_bytes - r.device_used_at_start_bytes - r.allocator_reserved_bytes;
  r.host_table_bytes = embeddings_->host_bytes();
  return r;
}

std::string GpuDlrm::describe() const {
  const ModelConfig& m = config_;
  std::string s = m.arch == Arch::dlrm ? "DLRM" : "DLRM-DCNv2";
  const char* mode = options_.profile_phases ? ", eager steps with phase timing"
                     : options_.cuda_graph      ? ", graph-captured steps"
                                                : ", eager steps";
  s += " (gpu " + std::to_string(props_.index) + ": " + props_.name + ", " + precision_name(options_.precision) +
       " GEMMs" + mode + "): " + describe_network(m) + "; " + std::to_string(dense_->total_elements()) +
       " dense parameters, dense optimizer " + dense_->optimizer_name();
  if (options_.precision == cublaslt::Precision::bf16 || options_.precision == cublaslt::Precision::fp16) {
    const std::string fp32 = fp32_layers(*bottom_, cross_.get(), *top_);
    s += std::string("; ") + precision_name(options_.precision) + " GEMMs with fp32 master weights" +
         (fp32.empty() ? std::string() : " (TF32 GEMMs on fp32 operands in " + fp32 + ")");
    if (loss_scale_.defined())
      s += ", dynamic loss scaling (initial scale " + std::to_string(static_cast<int64_t>(optim_.loss_scale)) +
           ", doubled after " + std::to_string(optim_.loss_scale_growth_interval) + " steps without overflow)";
  }
  s += embeddings_->describe(m);
  if (!tuned_.note.empty()) s += "; " + tuned_.note;
  if (!gemm_choice_.note().empty()) s += "; " + gemm_choice_.note();
  return s;
}

}  // namespace hetrec::model::gpu_model
