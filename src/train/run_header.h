#pragma once
// The record that starts each run in a metrics file, and the rule that keeps runs apart:
// a metrics file that already holds records takes a new run only when that run resumes
// from a checkpoint the file records (a "checkpoint" record of an earlier part of the
// same run); anything else is refused, so that two runs never mix in one file.
//
// The header: {"type": "run", "run_id", "utc", "version", "commit", "device",
// "world_size", "start_step", "config": <every key's resolved value>} and, when the run
// continues one, "resumed_from": <the checkpoint's path>. A resumed run keeps the run id
// of the part that wrote its checkpoint.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "train/config.h"

namespace hetrec::inline train {

// Who built the program that trains (the CLI's build info; "unknown" when not known).
struct BuildIdentity {
  std::string version = "unknown";
  std::string commit = "unknown";
};

// A new run id: 16 hex digits, random.
std::string new_run_id();

// The current UTC time as ISO 8601 ("2026-12-02T00:12:12Z").
std::string utc_now();

class RunHeader {
 public:
  // Reads what `metrics_path` holds already ("" or a missing file: nothing). A line that
  // is not JSON (a torn last line) is ignored.
  RunHeader(std::string metrics_path, BuildIdentity build);

  // Called before anything is trained: throws ConfigError (naming the file, the run it
  // holds and the two choices) when the file holds records and the run does not resume.
  void refuse_unless_resuming(bool resume) const;

  // The header of this run; `resumed_from` is the checkpoint it continues ("" for a fresh
  // start). Throws ConfigError when the file holds records and `resumed_from` is not a
  // checkpoint it records.
  nlohmann::json record(const RunConfig& cfg, const std::string& resumed_from, int64_t start_step,
                        const std::string& device, int world_size) const;

 private:
  struct Checkpoint {
    std::string path;
    std::string run_id;  // of the header before it
  };
  std::string refusal(const std::string& why) const;

  std::string path_;
  BuildIdentity build_;
  int64_t records_ = 0;
  std::string last_run_id_, last_utc_;
  std::vector<Checkpoint> checkpoints_;
};

}  // namespace hetrec::train::train
