#pragma once
// One candidate's trip through the gate (compile, resource check, verification against
// the reference, timing) and the JSON-lines log every attempt is appended to.
#include <string>

#include <nlohmann/json.hpp>

#include "tune/occupancy.h"
#include "tune/variant_space.h"

namespace hetrec::tune {

enum class Verdict {
  pruned,         // not compiled: the proposer's static rules
  compile_error,  // the compiler refused it
  resources,      // compiled, but spills or too low an occupancy
  launch_error,   // the launch failed
  wrong,          // its output differs from the reference
  passed,         // matched the reference and was timed
};
std::string verdict_name(Verdict v);

struct Attempt {
  std::string kernel;
  std::string shape;          // the shape key it was tuned for
  std::string origin;         // "space" (the variant space), "model" (the LLM-backed proposer)
  ParameterSet params;
  Verdict verdict = Verdict::pruned;
  std::string reason;         // why it was rejected; empty when passed
  bool compiled = false;
  ResourceReport resources;
  double occupancy = 0.0;
  double predicted_us = 0.0;
  double max_abs_error = 0.0;  // against the reference, when it ran
  double time_us = 0.0;        // median, when passed
  std::string source_hash;     // of the source it was compiled from
};

nlohmann::json to_json(const Attempt& a);

// Appends one JSON object per line to `path` (created if missing), flushed per attempt
// so a killed run keeps what it did.
class AttemptLog {
 public:
  explicit AttemptLog(std::string path);
  void append(const Attempt& a);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace hetrec::tune
