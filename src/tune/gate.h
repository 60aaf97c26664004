#pragma once
// The gate's bookkeeping: every attempt goes to the attempt log; only an attempt that
// compiled, matched the reference, was timed and beat the built-in variant may become a
// winner.
#include "tune/attempt.h"
#include "tune/winners.h"

namespace hetrec::tune {

struct GateContext {
  WinnerKey key;            // where a winner of this attempt would be stored
  double default_us = 0.0;  // the built-in variant's time on the same workload
  double floor_us = 0.0;
  std::string workload;
  std::string kernel_header;  // the rewritten header of a model candidate, else empty
};

class Gate {
 public:
  Gate(AttemptLog& log, WinnersStore& store) : log_(log), store_(store) {}
  // Logs `a`; offers it to the store when it passed and is faster than the built-in
  // variant (ctx.default_us). Returns whether it became the winner. Throws InternalError for a "passed" attempt without a time, or whose kernel
  // or source differ from the context's key.
  bool record(const Attempt& a, const GateContext& ctx);

 private:
  AttemptLog& log_;
  WinnersStore& store_;
};

}  // namespace hetrec::tune
