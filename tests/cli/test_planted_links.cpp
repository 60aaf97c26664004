// Files the program appends to are never written through a link planted at their name:
// the metrics log given by train.metrics_path is refused with the I/O exit code, and the
// link's target is left as it was.
#include <gtest/gtest.h>
#include <unistd.h>

#include "cli_test_support.h"

using namespace hetrec::test;
namespace fs = std::filesystem;

TEST(PlantedLinks, MetricsLogThroughASymlinkIsRefusedAndItsTargetUntouched) {
  const auto dir = scratch_dir("planted_metrics");
  const fs::path target = dir / "precious.txt", link = dir / "metrics.jsonl";
  { std::ofstream(target) << "keep me"; }
  fs::create_symlink(target, link);
  const auto r = run_hetrec("train --config configs/demo.toml --set train.steps=2 --set train.progress=off"
                            " --set train.eval_at_end=false --set \"train.checkpoint_dir=''\""
                            " --set \"train.metrics_path='" + link.string() + "'\"",
                            dir);
  EXPECT_EQ(r.code, 4) << r.err;
  EXPECT_NE(r.err.find("train.metrics_path '" + link.string() + "': is a symbolic link"), std::string::npos) << r.err;
  EXPECT_EQ(slurp(target), "keep me");
  EXPECT_TRUE(fs::is_symlink(link));
  fs::remove_all(dir);
}
