#include "tune/gate.h"

#include "core/error.h"

namespace hetrec::tune {

bool Gate::record(const Attempt& a, const GateContext& ctx) {
  log_.append(a);
  if (a.verdict != Verdict::passed) return false;
  if (!a.compiled || !(a.time_us > 0.0))
    throw InternalError("tune gate: attempt '" + describe(a.params) + "' marked passed without compiling and timing");
  if (a.kernel != ctx.key.kernel || a.shape != ctx.key.shape || a.source_hash != ctx.key.source_hash)
    throw InternalError("tune gate: attempt for " + a.kernel + " [" + a.shape + "] recorded against " + ctx.key.kernel +
                        " [" + ctx.key.shape + "]");
  // Not faster than the built-in kernel: the engine keeps the built-in one.
  if (ctx.default_us > 0.0 && a.time_us >= ctx.default_us) return false;
  Winner w;
  w.key = ctx.key;
  w.params = a.params;
  w.time_us = a.time_us;
  w.default_us = ctx.default_us;
  w.floor_us = ctx.floor_us;
  w.workload = ctx.workload;
  w.kernel_header = ctx.kernel_header;
  return store_.offer(w);
}

}  // namespace hetrec::tune
