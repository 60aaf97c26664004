// What the GPU engine reports: its description, device memory, phase times, loss scale,
// small-GEMM decisions, and the exact AUC computed on its device.
#include <limits>
#include <string>
#include <vector>

#include "core/error.h"
#include "gpu/device_buffer.h"
#include "kernels/auc.h"
#include "model/describe.h"
#include "model/gpu/gpu_dlrm_engine.h"

namespace hetrec::gpu_model {
namespace {

constexpr const char* kPhaseNames[kPhaseCount] = {
    "",          "bottom_mlp_fwd",  "embedding_fwd",  "embedding_exchange", "interaction_fwd",        "top_mlp_fwd",
    "loss",      "top_mlp_bwd",     "interaction_bwd", "bottom_mlp_bwd",    "dense_all_reduce",
    "embedding_grad_exchange", "embedding_bwd_update", "dense_optimizer"};
// Phases that exist only in data-parallel steps (not reported on one device).
bool data_parallel_phase(int p) { return p == kEmbeddingExchange || p == kDenseAllReduce || p == kGradientExchange; }

}  // namespace

std::vector<gpu_model::SmallGemmDecision> GpuDlrm::small_gemm_decisions() const {
  std::vector<gpu_model::SmallGemmDecision> out = bottom_->small_gemm_decisions("bottom_mlp");
  for (auto& d : top_->small_gemm_decisions("top_mlp")) out.push_back(std::move(d));
  return out;
}

std::vector<std::pair<std::string, double>> GpuDlrm::phase_ms() const {
  std::vector<std::pair<std::string, double>> out;
  if (!options_.profile_phases) return out;
  out.emplace_back("upload", upload_ms_);
  for (int p = 1; p < kPhaseCount; ++p)
    if (sharded_ || !data_parallel_phase(p))
      out.emplace_back(kPhaseNames[p], gpu::Event::elapsed_ms(phase_events_[static_cast<std::size_t>(p - 1)],
                                                            phase_events_[static_cast<std::size_t>(p)]));
  return out;
}

double GpuDlrm::loss_scale() const {
  if (!loss_scale_.defined()) return 1.0;
  kernels::LossScaleState st;
  gpu::memcpy_sync(&st, loss_scale_.raw(), sizeof(st), gpu::CopyKind::device_to_host);
  return st.scale;
}

std::optional<double> GpuDlrm::device_roc_auc(std::span<const float> scores, std::span<const float> labels) {
  if (scores.size() != labels.size()) throw InternalError("device_roc_auc: scores and labels differ in length");
  if (scores.empty()) return std::numeric_limits<double>::quiet_NaN();
  const auto n = static_cast<int64_t>(scores.size());
  // Evaluation-time buffers straight from the driver and freed at once, so they never
  // stay cached in the training step's allocator (nor count in its peak).
  gpu::DeviceBuffer d_scores(scores.size_bytes()), d_labels(labels.size_bytes()), d_auc(sizeof(double));
  gpu::DeviceBuffer workspace(kernels::roc_auc_workspace_bytes(n));
  const gpu::stream_t s = compute_.get();
  gpu::memcpy_async(d_scores.get(), scores.data(), scores.size_bytes(), gpu::CopyKind::host_to_device, s);
  gpu::memcpy_async(d_labels.get(), labels.data(), labels.size_bytes(), gpu::CopyKind::host_to_device, s);
  kernels::roc_auc(d_scores.as<float>(), d_labels.as<float>(), n, d_auc.as<double>(), workspace.get(),
                   workspace.bytes(), s);
  double auc = 0.0;
  gpu::memcpy_async(&auc, d_auc.get(), sizeof(double), gpu::CopyKind::device_to_host, s);
  compute_.synchronize();
  return auc;
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
  r.host_table_bytes = sharded_ ? sharded_->host_bytes() : static_cast<int64_t>(embeddings_->host_bytes());
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
    // Which layers fell back to fp32 GEMMs (widths not multiples of 8).
    std::string fp32_layers;
    const auto note = [&](const gpu_model::GpuMlp& mlp, const char* name) {
      for (int i = 0; i < mlp.num_layers(); ++i)
        if (!mlp.layer_16bit(i)) fp32_layers += std::string(fp32_layers.empty() ? "" : ", ") + name + "[" + std::to_string(i) + "]";
    };
    note(*bottom_, "bottom_mlp");
    note(*top_, "top_mlp");
    if (cross_ && !cross_->half()) fp32_layers += std::string(fp32_layers.empty() ? "" : ", ") + "cross_net";
    s += std::string("; ") + precision_name(options_.precision) + " GEMMs with fp32 master weights" +
         (fp32_layers.empty() ? std::string() : " (fp32 GEMMs in " + fp32_layers + ")");
    if (loss_scale_.defined())
      s += ", dynamic loss scaling (initial scale " + std::to_string(static_cast<int64_t>(optim_.loss_scale)) +
           ", doubled after " + std::to_string(optim_.loss_scale_growth_interval) + " steps without overflow)";
  }
  const int host = sharded_ ? sharded_->host_table_count() : embeddings_->host_table_count();
  if (sharded_) {
    s += "; data parallel over " + std::to_string(ranks()) + " GPUs (" + data_parallel_.devices->describe() +
         "), tables " + sharded_->describe();
    if (host > 0)
      s += "; " + std::to_string(host) + " shards on this rank in mapped host memory (" +
           std::to_string(sharded_->host_bytes() / (1024 * 1024)) + " MiB with their optimizer state)";
  } else if (host > 0) {
    std::string names;
    for (int t = 0; t < m.num_tables(); ++t)
      if (embeddings_->on_host(t)) names += (names.empty() ? "" : ", ") + m.tables[static_cast<std::size_t>(t)].name;
    s += "; " + std::to_string(host) + " of " + std::to_string(m.num_tables()) +
         " tables in mapped host memory (" + names + ", " +
         std::to_string(embeddings_->host_bytes() / (1024 * 1024)) + " MiB with their optimizer state)";
  } else {
    s += "; every table in device memory";
  }
  if (!tuned_.note.empty()) s += "; " + tuned_.note;
  if (!small_gemms_.note.empty()) s += "; " + small_gemms_.note;
  return s;
}

}  // namespace hetrec::gpu_model
