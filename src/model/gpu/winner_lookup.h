#pragma once
// Finding a tuned kernel's winner for this device: what each family's loader
// (tunable/<family>/<family>_loader.h) asks of the winners store before it compiles the
// winning variant in place of the built-in one.
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "gpu/device.h"
#include "tune/variant_space.h"
#include "tune/winners.h"

namespace hetrec::inline model::gpu_model {

// The winner for `kernel` and `shape` on this device and the run-time compiled kernels'
// sources, or nullopt and why there is none (`why_not`).
std::optional<tune::Winner> find_winner(const tune::WinnersStore& store, const gpu::DeviceProperties& device,
                                        const std::string& kernel, const std::string& shape, std::string& why_not);

// For a shape with a bf16 side (a bf16 exchange's pooled output or gradients) that has no
// winner of its own: the winner of the same shape with that side fp32 (`fp32_key`), whose
// variant walks the rows the same way, when it is plain source and `legal` for the bf16
// shape. Sets `note` to say so.
std::optional<tune::Winner> borrowed_winner(const tune::WinnersStore& store, const gpu::DeviceProperties& device,
                                            const std::string& kernel, const std::string& fp32_key,
                                            const std::function<bool(const tune::ParameterSet&)>& legal,
                                            const std::string& what, std::string& note);

// "a; b" (b alone when a is empty): the notes of the loaders, one after another.
std::string joined_note(const std::string& a, const std::string& b);

// The note of a loaded winner: "<what>: tuned variant <params>[ (model-rewritten source)]".
std::string tuned_note(const std::string& what, const tune::Winner& w);

// The winner `w` compiled as `Tuned` for `shape` (its parameters through `to_variant`), with
// its note ("<what>: tuned variant ...", then `suffix`) added to `note`; without a winner,
// null (the built-in variant runs) and the note says why (`why_not`).
template <class Tuned, class Shape, class ToVariant>
std::unique_ptr<Tuned> tuned_or_builtin(const std::optional<tune::Winner>& w, const Shape& shape, ToVariant to_variant,
                                        const gpu::DeviceProperties& device, const std::string& what,
                                        const std::string& why_not, const std::string& suffix, std::string& note) {
  if (!w) {
    note = joined_note(note, what + ": built-in variant (" + why_not + ")");
    return nullptr;
  }
  auto tuned = std::make_unique<Tuned>(shape, to_variant(w->params), device.compute_major, device.compute_minor,
                                       w->kernel_header);
  note = joined_note(note, tuned_note(what, *w) + suffix);
  return tuned;
}

}  // namespace hetrec::model::gpu_model
