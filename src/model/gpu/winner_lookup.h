#pragma once
// Finding a tuned kernel's winner for this device: what each family's loader
// (tunable/<family>/<family>_loader.h) asks of the winners store before it compiles the
// winning variant in place of the built-in one.
#include <functional>
#include <optional>
#include <string>

#include "gpu/device.h"
#include "tune/variant_space.h"
#include "tune/winners.h"

namespace hetrec::gpu_model {

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

}  // namespace hetrec::gpu_model
