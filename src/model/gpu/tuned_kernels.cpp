#include "model/gpu/tuned_kernels.h"

#include <filesystem>
#include <functional>
#include <map>
#include <optional>

#include "core/error.h"
#include "kernels/rtc_sources.h"
#include "tune/cross_net_cost.h"
#include "tune/dot_backward_cost.h"
#include "tune/dot_interaction_cost.h"
#include "tune/embedding_forward_cost.h"
#include "tune/kernel_families.h"
#include "tune/small_gemm_cost.h"
#include "tune/sparse_update_cost.h"
#include "tune/winners.h"

namespace hetrec::gpu_model {

namespace {

// The winner for `kernel` and `shape` on this device and sources, or why there is none.
std::optional<tune::Winner> find_winner(const tune::WinnersStore& store, const gpu::DeviceProperties& device,
                                        const std::string& kernel, const std::string& shape, std::string& why_not) {
  tune::WinnerKey key;
  key.kernel = kernel;
  key.shape = shape;
  key.gpu = device.name;
  key.compute_capability = std::to_string(device.compute_major) + "." + std::to_string(device.compute_minor);
  key.driver_version = gpu::driver_version();
  key.source_hash = kernels::rtc_sources_hash();
  std::optional<tune::Winner> w = store.find(key);
  if (!w) {
    const auto stale = store.stale(key);
    why_not = stale.empty() ? "no tuned winner for " + shape + " on " + key.gpu
                            : std::to_string(stale.size()) + " stale winner(s) for " + shape +
                                  " ignored: measured on another GPU, driver or kernel source";
  }
  return w;
}

std::string joined(const std::string& a, const std::string& b) { return a.empty() ? b : a + "; " + b; }

// For a shape with a bf16 side (a bf16 exchange's pooled output or gradients) that has no
// winner of its own: the winner of the same shape with that side fp32 (`fp32_key`), whose
// variant walks the rows the same way, when it is plain source and `legal` for the bf16
// shape. Sets `note` to say so.
std::optional<tune::Winner> borrowed_winner(const tune::WinnersStore& store, const gpu::DeviceProperties& device,
                                            const std::string& kernel, const std::string& fp32_key,
                                            const std::function<bool(const tune::ParameterSet&)>& legal,
                                            const std::string& what, std::string& note) {
  std::string unused;
  auto w = find_winner(store, device, kernel, fp32_key, unused);
  if (!w || !w->kernel_header.empty() || !legal(w->params)) return std::nullopt;
  note = " (the " + fp32_key + " winner, compiled for " + what + ")";
  return w;
}

// The cross net's forward pass: its winner, or the built-in variant and why.
void load_cross_forward_kernel(const tune::WinnersStore& store, const gpu::DeviceProperties& device,
                               const kernels::CrossNetShape& shape, TunedKernels& out) {
  std::string why_not;
  if (const auto w = find_winner(store, device, tune::kCrossForwardKernel, shape.key(), why_not)) {
    out.cross_forward = std::make_unique<kernels::TunedCrossForward>(
        shape, tune::to_cross_forward_variant(w->params), device.compute_major, device.compute_minor,
        w->kernel_header);
    out.note = joined(out.note, "cross forward: tuned variant " + tune::describe(w->params) +
                                    (w->kernel_header.empty() ? "" : " (model-rewritten source)"));
  } else {
    out.note = joined(out.note, "cross forward: built-in variant (" + why_not + ")");
  }
}

// The cross net's backward pass: its winner, or the built-in variant and why.
void load_cross_backward_kernel(const tune::WinnersStore& store, const gpu::DeviceProperties& device,
                                const kernels::CrossNetShape& shape, TunedKernels& out) {
  std::string why_not;
  if (const auto w = find_winner(store, device, tune::kCrossBackwardKernel, shape.key(), why_not)) {
    out.cross_backward = std::make_unique<kernels::TunedCrossBackward>(
        shape, tune::to_cross_backward_variant(w->params), device.compute_major, device.compute_minor,
        w->kernel_header);
    out.note = joined(out.note, "cross backward: tuned variant " + tune::describe(w->params) +
                                    (w->kernel_header.empty() ? "" : " (model-rewritten source)"));
  } else {
    out.note = joined(out.note, "cross backward: built-in variant (" + why_not + ")");
  }
}

}  // namespace

TunedKernels load_tuned_kernels(const std::string& winners_file, const gpu::DeviceProperties& device,
                                const kernels::EmbeddingForwardShape& forward_shape,
                                const kernels::DotForwardShape* dot_shape,
                                const kernels::SparseUpdateShape& update_shape,
                                const kernels::CrossNetShape* cross_shape) {
  TunedKernels out;
  if (winners_file.empty()) return out;
  if (!std::filesystem::exists(winners_file))
    throw ConfigError("tuned kernels file '" + winners_file + "' does not exist (run `hetrec tune` to write it)");
  const tune::WinnersStore store = tune::WinnersStore::load(winners_file);

  const auto load_embedding_forward = [&] {
    std::string why_not;
    auto forward = find_winner(store, device, tune::kEmbeddingForwardKernel, forward_shape.key(), why_not);
    std::string borrowed;
    if (!forward && forward_shape.out_dtype == DType::bf16) {
      kernels::EmbeddingForwardShape fp32_out = forward_shape;
      fp32_out.out_dtype = DType::f32;
      forward = borrowed_winner(
          store, device, tune::kEmbeddingForwardKernel, fp32_out.key(),
          [&](const tune::ParameterSet& p) {
            return kernels::forward_variant_problem(forward_shape, tune::to_forward_variant(p), device.warp_size)
                .empty();
          },
          "bf16 output", borrowed);
    }
    if (const auto& w = forward) {
      out.embedding_forward = std::make_unique<kernels::TunedEmbeddingForward>(
          forward_shape, tune::to_forward_variant(w->params), device.compute_major, device.compute_minor,
          w->kernel_header);
      out.note = joined(out.note, "embedding forward: tuned variant " + tune::describe(w->params) +
                                      (w->kernel_header.empty() ? "" : " (model-rewritten source)") + borrowed +
                                      " from " + winners_file);
    } else {
      out.note = joined(out.note, "embedding forward: built-in variant (" + why_not + ")");
    }
  };
  const auto load_dot_forward = [&] {
    if (!dot_shape) return;
    std::string why_not;
    if (const auto w = find_winner(store, device, tune::kDotForwardKernel, dot_shape->key(), why_not)) {
      out.dot_forward = std::make_unique<kernels::TunedDotForward>(*dot_shape, tune::to_dot_variant(w->params),
                                                                   device.compute_major, device.compute_minor,
                                                                   w->kernel_header);
      out.note = joined(out.note, "dot interaction: tuned variant " + tune::describe(w->params) +
                                      (w->kernel_header.empty() ? "" : " (model-rewritten source)"));
    } else {
      out.note = joined(out.note, "dot interaction: built-in variant (" + why_not + ")");
    }
  };
  const auto load_sparse_update = [&] {
    std::string why_not;
    auto update = find_winner(store, device, tune::kSparseUpdateKernel, update_shape.key(), why_not);
    std::string update_borrowed;
    if (!update && update_shape.grad_dtype == DType::bf16) {
      kernels::SparseUpdateShape fp32_grads = update_shape;
      fp32_grads.grad_dtype = DType::f32;
      update = borrowed_winner(
          store, device, tune::kSparseUpdateKernel, fp32_grads.key(),
          [&](const tune::ParameterSet& p) {
            return kernels::sparse_update_variant_problem(update_shape, tune::to_sparse_update_variant(p),
                                                          device.warp_size)
                .empty();
          },
          "bf16 gradients", update_borrowed);
    }
    if (const auto& w = update) {
      out.sparse_update = std::make_unique<kernels::TunedSparseUpdate>(update_shape,
                                                                       tune::to_sparse_update_variant(w->params),
                                                                       device.compute_major, device.compute_minor,
                                                                       w->kernel_header);
      out.note = joined(out.note, "embedding sparse update: tuned variant " + tune::describe(w->params) +
                                      (w->kernel_header.empty() ? "" : " (model-rewritten source)") +
                                      update_borrowed);
    } else {
      out.note = joined(out.note, "embedding sparse update: built-in variant (" + why_not + ")");
    }
  };
  const auto load_dot_backward = [&] {
    if (!dot_shape) return;
    std::string why_not;
    if (const auto w = find_winner(store, device, tune::kDotBackwardKernel, dot_shape->key(), why_not)) {
      out.dot_backward = std::make_unique<kernels::TunedDotBackward>(
          *dot_shape, tune::to_dot_backward_variant(w->params), device.compute_major, device.compute_minor,
          w->kernel_header);
      out.note = joined(out.note, "dot interaction backward: tuned variant " + tune::describe(w->params) +
                                      (w->kernel_header.empty() ? "" : " (model-rewritten source)"));
    } else {
      out.note = joined(out.note, "dot interaction backward: built-in variant (" + why_not + ")");
    }
  };
  const auto load_cross_forward = [&] {
    if (cross_shape) load_cross_forward_kernel(store, device, *cross_shape, out);
  };
  const auto load_cross_backward = [&] {
    if (cross_shape) load_cross_backward_kernel(store, device, *cross_shape, out);
  };
  // One loader per family of the list `hetrec tune` searches (tune/kernel_families.h), run
  // in its order; the small GEMMs' winners load per layer (model/gpu/tuned_small_gemms.h).
  const std::map<std::string, std::function<void()>> loaders = {
      {tune::kEmbeddingForwardKernel, load_embedding_forward}, {tune::kDotForwardKernel, load_dot_forward},
      {tune::kSparseUpdateKernel, load_sparse_update},         {tune::kDotBackwardKernel, load_dot_backward},
      {tune::kCrossForwardKernel, load_cross_forward},         {tune::kCrossBackwardKernel, load_cross_backward},
      {tune::kSmallGemmKernel, [] {}}};
  if (loaders.size() != tune::kernel_families().size())
    throw InternalError("tuned kernels: a loader names a kernel family that tune/kernel_families.h does not list");
  for (const tune::KernelFamily& f : tune::kernel_families()) {
    const auto it = loaders.find(f.kernel);
    if (it == loaders.end())
      throw InternalError("tuned kernels: kernel family '" + f.kernel + "' (tune/kernel_families.h) has no loader");
    it->second();
  }
  return out;
}

}  // namespace hetrec::gpu_model
