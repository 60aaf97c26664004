#pragma once
// The gate's bookkeeping: every attempt goes to the attempt log; only an attempt that
// compiled, matched the reference, was timed and beat the built-in variant may become a
// winner. A model-proposed kernel must in addition have matched the reference on every
// one of several independent input sets, edge shapes among them (verification_sets).
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "data/feature_spec.h"
#include "tune/attempt.h"
#include "tune/winners.h"

namespace hetrec::tune {

// ---- the input sets a model-proposed kernel is verified on ----

enum class InputShape {
  random,          // the workload's tables (rows capped), fresh random ids and values
  empty_bags,      // every other table's bags hold no id
  one_row_tables,  // every table has one row: every id of the batch is the same row
  hot_rows,        // every table has kHotRows rows and at least kHotRowHotness ids a bag
};
std::string input_shape_name(InputShape s);

struct VerificationSet {
  std::string name;  // "random-1", "empty-bags", ...: what a rejection names
  InputShape shape = InputShape::random;
  uint64_t seed = 0;  // draws the set's rows, ids and values
};

// Random sets beyond the timing workload's own: three independent draws, so a kernel
// that is right only by luck of one draw (a race, an uninitialised read) is caught with
// high probability.
inline constexpr int kRandomVerificationSets = 3;
// Samples per verification set: a prime, so no variant's samples (or rows) per block
// divides it and every set ends in a partial block; small, so a set costs milliseconds.
inline constexpr int64_t kVerificationBatch = 4093;
// Rows per table in a verification set: the largest tables capped, so a set's tables fit
// beside the timing workload's on the device (26 tables x 65536 rows x 512 B = 0.9 GB).
inline constexpr int64_t kVerificationMaxRows = int64_t{1} << 16;
// hot_rows: four rows per table, at least 16 ids per bag: every row is repeated across
// thousands of bags, so the sparse update's long-row chunking runs.
inline constexpr int64_t kHotRows = 4;
inline constexpr int kHotRowHotness = 16;

// The sets, in order: kRandomVerificationSets random ones, then, for a kernel that reads
// bags (the embedding forward, the sparse update), one of each edge shape. Seeds are
// hash_combine(base_seed, index + 1) (core/mix64.h): distinct from each other, and
// independent of base_seed (the timing workload's draw).
std::vector<VerificationSet> verification_sets(uint64_t base_seed, bool reads_bags);
// The tables of `shape` made from the workload's `tables` (same count, names and
// pooling, so the kernel's shape key is unchanged). Throws ConfigError when `tables` is
// empty.
std::vector<TableConfig> verification_tables(const std::vector<TableConfig>& tables, InputShape shape);

// One set's outcome, as a device bench reports it.
struct SetCheck {
  bool ok = false;
  std::string reason;
  double max_abs_error = 0.0;
};
struct SetsVerdict {
  bool ok = false;        // every set passed
  int sets_passed = 0;    // before the first failure
  int sets_required = 0;  // the number of sets
  std::string reason;     // the first failing set and why; empty when ok
  double max_abs_error = 0.0;  // over the sets that ran
};
// Runs `check` on each set in order, stopping at the first failure; passes only if every
// set passes (an empty list is an InternalError: nothing would be verified).
SetsVerdict verify_on_every_set(const std::vector<VerificationSet>& sets,
                                const std::function<SetCheck(const VerificationSet&)>& check);

// ---- the gate ----

struct GateContext {
  WinnerKey key;            // where a winner of this attempt would be stored
  double default_us = 0.0;  // the built-in variant's time on the same workload
  double floor_us = 0.0;
  std::string workload;
  std::string kernel_header;  // the rewritten header of a model candidate, else empty
  // A model candidate's verification sets (verify_on_every_set): passed and required.
  int sets_passed = 0;
  int sets_required = 0;
};

class Gate {
 public:
  Gate(AttemptLog& log, WinnersStore& store) : log_(log), store_(store) {}
  // Logs `a`; offers it to the store when it passed and is faster than the built-in
  // variant (ctx.default_us), and, for a model candidate (ctx.kernel_header set), when
  // it passed every verification set (ctx.sets_required > 0 and sets_passed equal to
  // it). Returns whether it became the winner. Throws InternalError for a "passed"
  // attempt without a time, or whose kernel or source differ from the context's key.
  bool record(const Attempt& a, const GateContext& ctx);

 private:
  AttemptLog& log_;
  WinnersStore& store_;
};

}  // namespace hetrec::tune
