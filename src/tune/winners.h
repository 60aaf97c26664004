#pragma once
// The tuned winners, stored as data the engine loads at start (no tuning during
// training). A winner is valid only on the GPU, compute capability, driver and kernel
// sources it was measured with; anything else is stale and ignored.
#include <optional>
#include <string>
#include <vector>

#include "tune/variant_space.h"

namespace hetrec::tune {

struct WinnerKey {
  std::string kernel;              // "embedding_bag_forward"
  std::string shape;               // the kernel's shape key, e.g. "rows=f32 out=f32 dim=128"
  std::string gpu;                 // the device name the driver reports
  std::string compute_capability;  // "9.0"
  int driver_version = 0;          // as the driver reports it, e.g. 13000
  std::string source_hash;         // of the kernel sources the variant compiles from
  bool operator==(const WinnerKey&) const = default;
};

struct Winner {
  WinnerKey key;
  ParameterSet params;
  double time_us = 0.0;     // median measured time of the winner
  double default_us = 0.0;  // of the built-in variant on the same workload
  double floor_us = 0.0;
  std::string workload;     // what it was timed on (one line)
  // A rewrite of the kernel header from the LLM-backed proposer; empty: the built-in
  // source with `params`.
  std::string kernel_header;
};

class WinnersStore {
 public:
  // An absent file is an empty store. Everything else is validated before any entry is
  // used, and a file that fails throws ConfigError naming the file, the entry and the
  // key: the size (at most 16 MiB), the schema (schema_version 1, no unknown key, every
  // key of an entry present with its type), the validators (compute capability
  // "major.minor", a positive driver version, a source hash of 16 lowercase hex
  // digits), the bounds (every parameter of the kernel family's variant space present
  // and one of its values, no other; times finite, non-negative, the winner's positive),
  // a model-rewritten header checked as a fresh reply is (check_proposed_header), and
  // one entry per key.
  static WinnersStore load(const std::string& path);
  // Writes to a temporary file and renames it over `path`.
  void save(const std::string& path) const;

  // The winner for exactly this key, if any.
  std::optional<Winner> find(const WinnerKey& key) const;
  // Winners of `kernel` and `shape` whose other fields differ from `key`: stale entries,
  // for a message saying why none applies.
  std::vector<Winner> stale(const WinnerKey& key) const;
  // Keeps `w` when there is no winner for its key yet or it is faster; returns whether
  // it was kept.
  bool offer(const Winner& w);

  const std::vector<Winner>& winners() const { return winners_; }

 private:
  std::vector<Winner> winners_;
};

}  // namespace hetrec::tune
