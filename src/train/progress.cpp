#include "train/progress.h"

#include <unistd.h>

#include <cmath>

namespace hetrec::inline train {

namespace {
// Seconds between redraws: in place on a terminal, as new lines in a log file.
constexpr double kTerminalInterval = 0.25;
constexpr double kLogInterval = 10.0;
}  // namespace

bool ProgressLine::stream_is_terminal(std::FILE* out) { return ::isatty(::fileno(out)) == 1; }

ProgressLine::ProgressLine(bool enabled, std::FILE* out)
    : enabled_(enabled), tty_(stream_is_terminal(out)), out_(out) {}

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const long s = std::lround(seconds);
  char buf[32];
  if (s >= 3600) std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", s / 3600, (s / 60) % 60, s % 60);
  else std::snprintf(buf, sizeof buf, "%ld:%02ld", s / 60, s % 60);
  return buf;
}

void ProgressLine::update(int64_t step, int64_t total, double samples_per_s, double loss, double last_auc,
                          double eta_seconds) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  const double since = std::chrono::duration<double>(now - last_print_).count();
  const bool last = total > 0 && step >= total;
  if (printed_ && since < (tty_ ? kTerminalInterval : kLogInterval) && !last) return;
  last_print_ = now;
  printed_ = true;
  std::string line;
  char buf[96];
  if (total > 0) {
    std::snprintf(buf, sizeof buf, "step %lld/%lld (%.1f%%)", static_cast<long long>(step),
                  static_cast<long long>(total), 100.0 * static_cast<double>(step) / static_cast<double>(total));
  } else {
    std::snprintf(buf, sizeof buf, "step %lld", static_cast<long long>(step));
  }
  line += buf;
  std::snprintf(buf, sizeof buf, " | %.0f samples/s | loss %.5f", samples_per_s, loss);
  line += buf;
  if (std::isfinite(last_auc)) {
    std::snprintf(buf, sizeof buf, " | eval AUC %.5f", last_auc);
    line += buf;
  }
  if (eta_seconds >= 0) line += " | ETA " + format_duration(eta_seconds);
  std::fputs(tty_ ? "\r\033[K" : "", out_);
  std::fputs(line.c_str(), out_);
  if (!tty_) std::fputc('\n', out_);
  std::fflush(out_);
}

void ProgressLine::finish() {
  if (enabled_ && tty_ && printed_) {
    std::fputc('\n', out_);
    std::fflush(out_);
  }
}

}  // namespace hetrec::train::train
