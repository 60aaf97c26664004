#pragma once
// The live progress line: step, share done, samples/s, loss, last AUC and ETA. On a
// terminal it rewrites one line in place; otherwise it prints a line every few seconds.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace hetrec::inline train {

class ProgressLine {
 public:
  // `enabled` false makes every call a no-op.
  ProgressLine(bool enabled, std::FILE* out);
  // total_steps < 0 when the length is unknown (a streamed TSV file); eta_seconds < 0
  // when unknown; last_auc NaN before the first evaluation.
  void update(int64_t step, int64_t total_steps, double samples_per_s, double loss, double last_auc,
              double eta_seconds);
  void finish();  // ends the in-place line
  static bool stream_is_terminal(std::FILE* out);

 private:
  bool enabled_;
  bool tty_;
  std::FILE* out_;
  std::chrono::steady_clock::time_point last_print_{};
  bool printed_ = false;
};

std::string format_duration(double seconds);  // "1:02:03" / "2:03"

}  // namespace hetrec::train::train
