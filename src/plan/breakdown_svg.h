#pragma once
// An SVG chart of predicted step times: one horizontal bar per recipe, stacked by phase,
// with a millisecond axis and a legend. Plain SVG 1.1 text, no scripts, no dependencies.
#include <string>
#include <utility>
#include <vector>

#include "plan/step_model.h"

namespace hetrec {

// `bars`: (label, prediction) in drawing order, top to bottom. Labels are escaped.
std::string breakdown_svg(const std::string& title, const std::vector<std::pair<std::string, StepPrediction>>& bars);

}  // namespace hetrec
