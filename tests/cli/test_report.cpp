// `hetrec report`: a run's metrics file becomes one self-contained HTML page with inline
// SVG charts of the loss, the evaluation AUC and the throughput, and the run header's
// facts; a file that is not a metrics file is refused with the data-error exit code
// naming the file and line. Through the real program.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_test_support.h"

using namespace hetrec::test;
namespace fs = std::filesystem;

namespace {

constexpr int kExitData = 3;
constexpr int kExitIo = 4;

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST(ReportCommand, DrawsTheCurvesOfARunAsOneSelfContainedPage) {
  const auto dir = scratch_dir("report");
  const fs::path metrics = dir / "m.jsonl", page = dir / "report.html";
  RunResult r = run_hetrec("train --config configs/demo.toml --set train.steps=40 --set train.eval_every=20"
                           " --set train.eval_samples=4096 --set train.progress=off --set train.log_level=warn"
                           " --set train.threads=2 --set train.log_every=5 --set train.checkpoint_dir=''"
                           " --set \"train.metrics_path='" + metrics.string() + "'\"",
                           dir);
  ASSERT_EQ(r.code, 0) << r.err;
  r = run_hetrec("report --metrics '" + metrics.string() + "' --out '" + page.string() + "'", dir);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("8 train and 2 eval records"), std::string::npos) << r.out;
  const std::string html = slurp(page);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(count(html, "<svg "), 3u);
  for (const char* title : {">Training loss<", ">Evaluation AUC<", ">Throughput<", ">training step<"})
    EXPECT_NE(html.find(title), std::string::npos) << title;
  // Loss and samples/s as lines of 8 points; AUC as 2 markers.
  EXPECT_EQ(count(html, "<polyline "), 3u);  // loss, samples/s, and the AUC's 2 points
  EXPECT_EQ(count(html, "<circle "), 2u);
  // Self-contained: nothing fetched, no script.
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_EQ(html.find("href="), std::string::npos);
  // The header's facts and the config summary.
  const std::string first = slurp(metrics).substr(0, slurp(metrics).find('\n'));
  const auto header = nlohmann::json::parse(first);
  EXPECT_NE(html.find("hetrec run " + header["run_id"].get<std::string>()), std::string::npos);
  EXPECT_NE(html.find("<td>" + header["commit"].get<std::string>() + "</td>"), std::string::npos);
  EXPECT_NE(html.find("dlrm, 8 tables (12550 rows), dim 16"), std::string::npos) << html;
  EXPECT_NE(html.find("batch 2048, steps 40"), std::string::npos);
  fs::remove_all(dir);
}

TEST(ReportCommand, RefusesWhatIsNotAMetricsFile) {
  const auto dir = scratch_dir("report_bad");
  const fs::path bad = dir / "bad.jsonl", page = dir / "r.html";
  std::ofstream(bad) << "{\"type\":\"run\",\"run_id\":\"ab\"}\n{\"type\":\"train\",\"step\":1,\"loss\":0.5,"
                        "\"samples_per_s\":10}\nnot json\n";
  RunResult r = run_hetrec("report --metrics '" + bad.string() + "' --out '" + page.string() + "'", dir);
  EXPECT_EQ(r.code, kExitData);
  EXPECT_NE(r.err.find("metrics file '" + bad.string() + "', line 3: expected a JSON object"), std::string::npos)
      << r.err;
  std::ofstream(bad) << "{\"type\":\"train\",\"step\":\"one\",\"loss\":0.5}\n";
  r = run_hetrec("report --metrics '" + bad.string() + "' --out '" + page.string() + "'", dir);
  EXPECT_EQ(r.code, kExitData);
  EXPECT_NE(r.err.find("line 1: key 'step': expected a number"), std::string::npos) << r.err;
  std::ofstream(bad) << "{\"type\":\"run\",\"run_id\":\"ab\"}\n";
  r = run_hetrec("report --metrics '" + bad.string() + "' --out '" + page.string() + "'", dir);
  EXPECT_EQ(r.code, kExitData);
  EXPECT_NE(r.err.find("holds no \"train\" or \"eval\" record of run ab"), std::string::npos) << r.err;
  r = run_hetrec("report --metrics '" + (dir / "missing.jsonl").string() + "' --out '" + page.string() + "'", dir);
  EXPECT_EQ(r.code, kExitIo);
  EXPECT_NE(r.err.find("cannot be opened for reading"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(page));
  fs::remove_all(dir);
}
