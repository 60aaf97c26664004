#include "model/gpu/dense_network.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/seed_streams.h"
#include "nn/cross_net.h"
#include "nn/mlp.h"
#include "optim/dense_optimizer.h"

namespace hetrec::inline model::gpu_model {

GpuDenseNetwork make_dense_network(const ModelConfig& model, const OptimConfig& optim, cublaslt::Precision precision,
                                   Allocator& device, gpu::stream_t stream) {
  const uint64_t dense_seed = seed_streams::dense_init_seed(model.init_seed);
  Mlp<float> bottom(model.num_dense, model.bottom_mlp, /*relu_last=*/true);
  bottom.init(dense_seed, seed_streams::kBottomMlpStreams);
  Mlp<float> top(model.interaction_width(), model.top_mlp, /*relu_last=*/false);
  top.init(dense_seed, seed_streams::kTopMlpStreams);
  std::optional<CrossNet<float>> cross;
  if (model.arch == Arch::dcnv2 && model.cross_layers > 0) {
    cross.emplace(model.interaction_width(), model.cross_layers, model.cross_rank);
    cross->init(dense_seed, seed_streams::kCrossNetStreams);
  }
  std::vector<DenseParam> params = bottom.parameters("bottom_mlp.");
  const int cross_first = static_cast<int>(params.size());
  if (cross)
    for (auto& p : cross->parameters("cross_net.")) params.push_back(std::move(p));
  const int top_first = static_cast<int>(params.size());
  for (auto& p : top.parameters("top_mlp.")) params.push_back(std::move(p));
  (void)DenseOptimizer::create(optim, params);  // validates optim.* as the CPU model does

  const DType copy_type = precision == cublaslt::Precision::bf16   ? DType::bf16
                          : precision == cublaslt::Precision::fp16 ? DType::f16
                                                                   : DType::f32;
  GpuDenseNetwork net;
  net.params = std::make_unique<DenseParameters>(params, optim, device, stream, copy_type);
  const ReluBackward relu_epilogues = model.relu_backward;
  net.bottom = std::make_unique<GpuMlp>(model.num_dense, model.bottom_mlp, true, *net.params, 0, precision,
                                        /*input_16bit=*/false, relu_epilogues);
  if (cross)
    net.cross = std::make_unique<GpuCrossNet>(model.interaction_width(), model.cross_layers, model.cross_rank,
                                              *net.params, cross_first, precision);
  const bool cross_16bit = net.cross && net.cross->half();
  net.top = std::make_unique<GpuMlp>(model.interaction_width(), model.top_mlp, false, *net.params, top_first, precision,
                                     cross_16bit, relu_epilogues);
  if (cross_16bit) net.cross->set_output_16bit_only(net.top->layer_16bit(0));
  if (cross_16bit) net.cross->set_residual_16bit(model.cross_residual_16bit);
  const cublaslt::Precision unaligned = model.unaligned_tf32 ? cublaslt::Precision::tf32 : cublaslt::Precision::fp32;
  net.bottom->set_unaligned_precision(unaligned);
  net.top->set_unaligned_precision(unaligned);
  if (net.cross) net.cross->set_unaligned_precision(unaligned);
  return net;
}

std::string fp32_layers(const GpuMlp& bottom, const GpuCrossNet* cross, const GpuMlp& top) {
  std::string out;
  const auto add = [&](const std::string& name) { out += (out.empty() ? "" : ", ") + name; };
  for (int i = 0; i < bottom.num_layers(); ++i)
    if (!bottom.layer_16bit(i)) add("bottom_mlp[" + std::to_string(i) + "]");
  for (int i = 0; i < top.num_layers(); ++i)
    if (!top.layer_16bit(i)) add("top_mlp[" + std::to_string(i) + "]");
  if (cross && !cross->half()) add("cross_net");
  return out;
}

}  // namespace hetrec::model::gpu_model
