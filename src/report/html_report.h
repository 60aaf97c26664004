#pragma once
// `hetrec report`: one self-contained HTML page (no script, no external file) for a run:
// the run header's facts (run id, start, commit, version, device, resumptions), a
// summary of its resolved config, the final results, and inline SVG charts of the
// training loss, the evaluation AUC and the throughput (samples/s) over steps.
#include <string>

#include "report/metrics_series.h"

namespace hetrec::report {

// `source` names the metrics file in the page.
std::string html_report(const RunSeries& run, const std::string& source);

}  // namespace hetrec::report
