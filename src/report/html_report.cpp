#include "report/html_report.h"

#include <fmt/format.h>

#include <utility>
#include <vector>

#include "report/line_chart.h"
#include "report/svg_text.h"

namespace hetrec::report {
namespace {

// Line colours: blue, vermillion and bluish green of the Okabe-Ito palette, which stays
// distinguishable with the common colour-vision deficiencies (Okabe & Ito, "Color
// Universal Design", 2008, https://jfly.uni-koeln.de/color/).
constexpr const char* kLossColour = "#0072b2";
constexpr const char* kAucColour = "#d55e00";
constexpr const char* kRateColour = "#009e73";

std::string text_of(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "";
  return v.dump();
}

std::string get(const nlohmann::json& j, const std::vector<const char*>& keys) {
  const nlohmann::json* at = &j;
  for (const char* k : keys) {
    if (!at->is_object() || !at->contains(k)) return "";
    at = &(*at)[k];
  }
  return text_of(*at);
}

// A number of the final record with `decimals` decimals, or "" when absent.
std::string fixed(const nlohmann::json& j, const char* key, int decimals) {
  if (!j.contains(key) || !j[key].is_number()) return "";
  return fmt::format("{:.{}f}", j[key].get<double>(), decimals);
}

// The config in a few lines: what a reader compares between runs.
std::vector<std::pair<std::string, std::string>> config_summary(const nlohmann::json& c) {
  std::vector<std::pair<std::string, std::string>> rows;
  if (!c.is_object()) return rows;
  int64_t rows_total = 0;
  std::size_t tables = 0;
  if (c.contains("model") && c["model"].contains("tables") && c["model"]["tables"].is_array()) {
    tables = c["model"]["tables"].size();
    for (const auto& t : c["model"]["tables"]) rows_total += t.value("rows", int64_t{0});
  }
  rows.emplace_back("config file", get(c, {"source"}));
  rows.emplace_back("model", get(c, {"model", "arch"}) + ", " + std::to_string(tables) + " tables (" +
                                 std::to_string(rows_total) + " rows), dim " + get(c, {"model", "embedding_dim"}) +
                                 ", bottom " + get(c, {"model", "bottom_mlp"}) + ", top " + get(c, {"model", "top_mlp"}));
  rows.emplace_back("precision", "rows " + get(c, {"model", "row_dtype"}) + ", dense " + get(c, {"model", "dense_dtype"}));
  rows.emplace_back("optimizers", "dense " + get(c, {"optim", "dense"}) + " (lr " + get(c, {"optim", "lr"}) +
                                      "), sparse " + get(c, {"optim", "sparse"}) + " (lr " +
                                      get(c, {"optim", "sparse_lr"}) + ")");
  rows.emplace_back("data", get(c, {"data", "format"}) +
                                (get(c, {"data", "train_path"}).empty() ? "" : ", " + get(c, {"data", "train_path"})));
  rows.emplace_back("training", "batch " + get(c, {"train", "batch_size"}) + ", steps " + get(c, {"train", "steps"}) +
                                    ", epochs " + get(c, {"train", "epochs"}) + ", eval every " +
                                    get(c, {"train", "eval_every"}));
  return rows;
}

void table(std::string& h, const std::vector<std::pair<std::string, std::string>>& rows) {
  h += "<table>\n";
  for (const auto& [k, v] : rows)
    if (!v.empty()) h += "<tr><th>" + escape_xml(k) + "</th><td>" + escape_xml(v) + "</td></tr>\n";
  h += "</table>\n";
}

}  // namespace

std::string html_report(const RunSeries& run, const std::string& source) {
  const nlohmann::json first = run.headers.empty() ? nlohmann::json::object() : run.headers.front();
  const std::string title =
      "hetrec run " + (run.run_id.empty() ? std::string("(no run header)") : run.run_id);
  std::string h = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" + escape_xml(title) +
                  "</title>\n<style>\n"
                  "body { font-family: sans-serif; margin: 24px; color: #111111; max-width: 900px; }\n"
                  "table { border-collapse: collapse; margin-bottom: 16px; }\n"
                  "th, td { text-align: left; padding: 3px 10px; border-bottom: 1px solid #dddddd; "
                  "vertical-align: top; overflow-wrap: anywhere; }\n"
                  "th { white-space: nowrap; }\n"
                  "svg { display: block; margin: 12px 0; }\n"
                  "details pre { font-size: 12px; white-space: pre-wrap; overflow-wrap: anywhere; }\n"
                  "</style>\n</head>\n<body>\n";
  h += "<h1>" + escape_xml(title) + "</h1>\n";
  std::vector<std::pair<std::string, std::string>> facts = {
      {"metrics file", source},
      {"started (UTC)", get(first, {"utc"})},
      {"commit", get(first, {"commit"})},
      {"hetrec version", get(first, {"version"})},
      {"device", get(first, {"device"})},
      {"ranks", get(first, {"world_size"})}};
  for (std::size_t i = 1; i < run.headers.size(); ++i)
    facts.emplace_back("resumed (UTC " + get(run.headers[i], {"utc"}) + ")",
                       "from " + get(run.headers[i], {"resumed_from"}) + " at step " +
                           get(run.headers[i], {"start_step"}) + ", commit " + get(run.headers[i], {"commit"}));
  if (run.other_runs > 0)
    facts.emplace_back("other runs in the file", std::to_string(run.other_runs) + " (not drawn)");
  table(h, facts);
  if (first.contains("config")) {
    h += "<h2>Configuration</h2>\n";
    table(h, config_summary(first["config"]));
  }
  const nlohmann::json& f = run.final_record;
  if (f.is_object()) {
    h += "<h2>Result</h2>\n";
    table(h, {{"steps", get(f, {"step"})},
              {"eval AUC", fixed(f, "auc", 5)},
              {"eval log-loss", fixed(f, "log_loss", 5)},
              {"Bayes-optimal AUC", fixed(f, "bayes_optimal_auc", 5)},
              {"samples/s", fixed(f, "samples_per_s", 0)},
              {"step time, median (ms)", fixed(f, "step_ms_median", 3)}});
  }
  h += "<h2>Curves</h2>\n";
  h += line_chart_svg({"Training loss", "loss (mean over each logged window)", kLossColour, run.loss, false});
  h += line_chart_svg({"Evaluation AUC", "AUC", kAucColour, run.auc, true});
  h += line_chart_svg({"Throughput", "samples/s", kRateColour, run.samples_per_s, false});
  if (first.contains("config"))
    h += "<details><summary>Resolved configuration (every key)</summary>\n<pre>" +
         escape_xml(first["config"].dump(2)) + "</pre>\n</details>\n";
  h += "</body>\n</html>\n";
  return h;
}

}  // namespace hetrec::report
