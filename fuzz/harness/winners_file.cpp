// Fuzz target: the tuned kernel winners file (tune/winners.h, `tune/winners.json`).
#include <cmath>
#include <string>

#include "harness/fuzz_support.h"
#include "harness/fuzz_targets.h"
#include "tune/proposer_reply.h"
#include "tune/winners.h"

namespace hetrec::fuzz {

void winners_file(std::span<const uint8_t> data) {
  const MemoryFile file(std::string_view(reinterpret_cast<const char*>(data.data()), data.size()));
  tune::WinnersStore store;
  if (!accepted([&] { store = tune::WinnersStore::load(file.path()); })) return;
  // What was accepted keeps the guarantees the engine relies on.
  for (const tune::Winner& w : store.winners()) {
    if (!(w.time_us > 0.0) || !std::isfinite(w.time_us) || !(w.default_us >= 0.0) || !(w.floor_us >= 0.0))
      finding("accepted a winner with time " + std::to_string(w.time_us) + " us");
    if (w.key.source_hash.size() != 16) finding("accepted source hash '" + w.key.source_hash + "'");
    if (w.params.empty()) finding("accepted a winner without parameters");
    if (!w.kernel_header.empty()) {
      try {
        tune::check_proposed_header(w.kernel_header);
      } catch (const IoError& e) {
        finding(std::string("accepted a kernel_header the reply check refuses: ") + e.what());
      }
    }
  }
  if (store.winners().empty()) return;
  // A save and a load give back the same winners.
  const ScratchDirectory dir;
  const std::string path = dir.path() + "/winners.json";
  store.save(path);
  const tune::WinnersStore again = tune::WinnersStore::load(path);
  if (again.winners().size() != store.winners().size())
    finding(std::to_string(store.winners().size()) + " winners loaded, " + std::to_string(again.winners().size()) +
            " after a save/load round trip");
  for (std::size_t i = 0; i < store.winners().size(); ++i) {
    const tune::Winner& a = store.winners()[i];
    const tune::Winner& b = again.winners()[i];
    if (!(a.key == b.key) || a.params != b.params || a.time_us != b.time_us || a.default_us != b.default_us ||
        a.floor_us != b.floor_us || a.workload != b.workload || a.kernel_header != b.kernel_header)
      finding("winners[" + std::to_string(i) + "] changed in a save/load round trip");
  }
}

}  // namespace hetrec::fuzz
