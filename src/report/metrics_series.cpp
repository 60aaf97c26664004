#include "report/metrics_series.h"

#include <fstream>

#include "core/error.h"

namespace hetrec::report {
namespace {

double number(const nlohmann::json& r, const char* key, const std::string& where) {
  const auto it = r.find(key);
  if (it == r.end() || !it->is_number())
    throw DataError(where + ": key '" + key + "': expected a number in a '" + r.value("type", "") + "' record");
  return it->get<double>();
}

}  // namespace

RunSeries read_metrics(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw IoError("metrics file '" + path + "': cannot be opened for reading");
  std::vector<nlohmann::json> records;
  std::vector<int64_t> lines;
  int64_t line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json r = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!r.is_object() || !r.contains("type") || !r["type"].is_string())
      throw DataError("metrics file '" + path + "', line " + std::to_string(line_no) +
                      ": expected a JSON object with a \"type\" (a line hetrec train writes)");
    records.push_back(std::move(r));
    lines.push_back(line_no);
  }
  // The run to draw: the last header's run id.
  std::string run_id;
  std::vector<std::string> ids;
  for (const nlohmann::json& r : records)
    if (r["type"] == "run") {
      run_id = r.value("run_id", "");
      bool seen = false;
      for (const std::string& id : ids) seen = seen || id == run_id;
      if (!seen) ids.push_back(run_id);
    }
  RunSeries s;
  s.run_id = run_id;
  s.other_runs = ids.empty() ? 0 : static_cast<int>(ids.size()) - 1;
  bool in_run = ids.empty() || ids.front() == run_id;  // records before the first header
  for (std::size_t i = 0; i < records.size(); ++i) {
    const nlohmann::json& r = records[i];
    const std::string where = "metrics file '" + path + "', line " + std::to_string(lines[i]);
    const std::string type = r["type"].get<std::string>();
    if (type == "run") {
      in_run = r.value("run_id", "") == run_id;
      if (in_run) s.headers.push_back(r);
      continue;
    }
    if (!in_run) continue;
    if (type == "train") {
      const double step = number(r, "step", where);
      s.loss.push_back({step, number(r, "loss", where)});
      s.samples_per_s.push_back({step, number(r, "samples_per_s", where)});
    } else if (type == "eval") {
      s.auc.push_back({number(r, "step", where), number(r, "auc", where)});
    } else if (type == "final") {
      s.final_record = r;
    }
  }
  if (s.loss.empty() && s.auc.empty())
    throw DataError("metrics file '" + path + "': holds no \"train\" or \"eval\" record" +
                    (run_id.empty() ? std::string() : " of run " + run_id) + ": nothing to draw");
  return s;
}

}  // namespace hetrec::report
