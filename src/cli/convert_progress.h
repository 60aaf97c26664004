#pragma once
// The progress line of `hetrec data convert` on stderr, drawn as train's
// (train/progress.h): rewritten in place on a terminal every kTerminalInterval seconds,
// otherwise a line every kLogInterval seconds; the first and the last update always show.
#include <chrono>
#include <cstdio>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "data/mlperf_convert.h"
#include "train/progress.h"

namespace hetrec::cli {

class ConvertProgressLine {
 public:
  ConvertProgressLine(std::FILE* out, std::string output)
      : out_(out), tty_(ProgressLine::stream_is_terminal(out)), output_(std::move(output)),
        start_(std::chrono::steady_clock::now()) {}

  void update(const ConvertProgress& p) {
    const auto now = std::chrono::steady_clock::now();
    const bool last = p.samples_done >= p.samples;
    if (shown_ && !last && std::chrono::duration<double>(now - last_).count() < (tty_ ? kTerminalInterval : kLogInterval))
      return;
    last_ = now;
    shown_ = true;
    const double seconds = std::chrono::duration<double>(now - start_).count();
    const double rate = seconds > 0 ? static_cast<double>(p.samples_done) / seconds : 0.0;
    const double eta = rate > 0 ? static_cast<double>(p.samples - p.samples_done) / rate : -1.0;
    const std::string line = fmt::format(
        "convert -> {}: {}/{} samples ({:.1f}%) | {:.0f} samples/s | ETA {}", output_, p.samples_done, p.samples,
        p.samples > 0 ? 100.0 * static_cast<double>(p.samples_done) / static_cast<double>(p.samples) : 100.0, rate,
        format_duration(eta));
    std::fputs(tty_ ? "\r\033[K" : "", out_);
    std::fputs(line.c_str(), out_);
    if (!tty_) std::fputc('\n', out_);
    std::fflush(out_);
  }
  void finish() {  // ends the in-place line
    if (tty_ && shown_) std::fputc('\n', out_);
    std::fflush(out_);
  }

 private:
  static constexpr double kTerminalInterval = 0.25;
  static constexpr double kLogInterval = 10.0;
  std::FILE* out_;
  bool tty_;
  std::string output_;
  std::chrono::steady_clock::time_point start_, last_{};
  bool shown_ = false;
};

}  // namespace hetrec::cli
