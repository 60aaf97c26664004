#pragma once
// One run read back from a metrics file (train/run_header.h, train/trainer.h): its run
// headers and the points of its curves. A file may hold several parts of one run (a run
// and its resumptions, one header each); records before any header belong to the first.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace hetrec::report {

struct Point {
  double step = 0.0;
  double value = 0.0;
};

struct RunSeries {
  std::string run_id;                  // "" when the file has no run header
  std::vector<nlohmann::json> headers;  // this run's "run" records, in file order
  std::vector<Point> loss;             // "train": mean loss of the logged window
  std::vector<Point> samples_per_s;    // "train"
  std::vector<Point> auc;              // "eval"
  nlohmann::json final_record;         // the last "final" record, or null
  int other_runs = 0;                  // runs in the file besides this one
};

// Reads `path` and returns its last run (the run id of the last header, with every part
// of it). Throws IoError when the file cannot be read and DataError naming the file and
// line for a line that is not a JSON object, a record whose step or value is not a number,
// or a file with no train or eval record.
RunSeries read_metrics(const std::string& path);

}  // namespace hetrec::report
