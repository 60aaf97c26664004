#pragma once
// An SVG chart of predicted steps: one horizontal bar per recipe, stacked by phase, under
// the accelerator's full name and recipe, with the predicted samples/s (and its ratio to
// the fastest bar), the step time and the peak device memory beside it; a millisecond
// axis; a legend of the phases that appear; a title that says what is compared. Plain
// SVG 1.1 text, no scripts, no dependencies.
#include <string>
#include <vector>

#include "plan/step_model.h"

namespace hetrec::inline plan {

struct ChartBar {
  std::string accelerator;  // the full display name, e.g. "NVIDIA H200 SXM" (and " x2" for two GPUs)
  std::string recipe;       // e.g. "batch 65536, bf16 GEMMs, fp32 rows"
  StepPrediction step;
  double peak_device_bytes = 0.0;    // predicted device memory of the rank that needs most
  double usable_device_bytes = 0.0;  // what that device offers (0: not shown)
};

// `subject` is what is planned, e.g. "configs/dlrm_dcnv2_mlperf.toml"; the title adds
// what the bars compare. Text is escaped; the chart is as wide as its longest text.
std::string breakdown_svg(const std::string& subject, const std::vector<ChartBar>& bars);

// An upper bound of a text's width in the chart's sans-serif font at `font_px` (no glyph
// of the common sans-serif fonts is wider on average than 0.62 em over a label).
double text_width_bound(const std::string& text, double font_px);

}  // namespace hetrec::plan::plan
