// Memory admission: the kernel's files parsed as the kernel writes them, the estimate of
// the CPU engine checked against what the engine really allocates, and the refusal's
// message. The real program's refusal is tested in tests/hardening/test_out_of_memory.cpp.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "core/error.h"
#include "model/dlrm.h"
#include "train/config.h"
#include "train/memory_admission.h"

using namespace hetrec;

namespace {

double consumer_bytes(const std::vector<MemoryConsumer>& consumers, const std::string& prefix) {
  double s = 0.0;
  for (const MemoryConsumer& c : consumers) s += c.name.rfind(prefix, 0) == 0 ? c.bytes : 0.0;
  return s;
}

RunConfig config_of(const std::string& model_and_optim) {
  return parse_run_config(model_and_optim + "\n[train]\nbatch_size = 32\neval_batch_size = 64\n", "test.toml");
}

}  // namespace

TEST(MemoryAdmission, MeminfoAvailableIsReadInKiB) {
  const std::string meminfo =
      "MemTotal:       24731200 kB\nMemFree:         1234567 kB\nMemAvailable:   23741716 kB\nBuffers:  1 kB\n";
  ASSERT_TRUE(meminfo_available_bytes(meminfo).has_value());
  EXPECT_DOUBLE_EQ(*meminfo_available_bytes(meminfo), 23741716.0 * 1024.0);
  EXPECT_FALSE(meminfo_available_bytes("MemTotal: 100 kB\n").has_value());  // kernels before 3.14
  EXPECT_FALSE(meminfo_available_bytes("").has_value());
}

TEST(MemoryAdmission, CgroupLimitFiles) {
  EXPECT_FALSE(cgroup_limit_bytes("max\n").has_value());                    // v2, no limit
  EXPECT_FALSE(cgroup_limit_bytes("9223372036854771712\n").has_value());    // v1, no limit
  EXPECT_FALSE(cgroup_limit_bytes("").has_value());                         // no such file
  ASSERT_TRUE(cgroup_limit_bytes("4294967296\n").has_value());
  EXPECT_DOUBLE_EQ(*cgroup_limit_bytes("4294967296\n"), 4294967296.0);
  // memory.stat (v2 names; v1 has total_inactive_file too): the exact key, not a prefix.
  const std::string stat = "anon 1000\nfile 5000\nactive_file 3000\ninactive_file 2000\n";
  ASSERT_TRUE(memory_stat_bytes(stat, "inactive_file").has_value());
  EXPECT_DOUBLE_EQ(*memory_stat_bytes(stat, "inactive_file"), 2000.0);
  EXPECT_DOUBLE_EQ(*memory_stat_bytes(stat, "file"), 5000.0);
  EXPECT_FALSE(memory_stat_bytes(stat, "total_inactive_file").has_value());
}

TEST(MemoryAdmission, CgroupDirectoryFromProcFiles) {
  const std::string v2_mount = "30 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec shared:4 - cgroup2 cgroup2 rw,nsdelegate\n";
  const std::string v1_mount = "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
                               "36 31 0:33 / /sys/fs/cgroup/devices rw,relatime - cgroup cgroup rw,devices\n";
  // Unified hierarchy only.
  auto d = cgroup_memory_dir("0::/user.slice/user-0.slice/session-3.scope\n", v2_mount);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->version, 2);
  EXPECT_EQ(d->path, "/sys/fs/cgroup/user.slice/user-0.slice/session-3.scope");
  EXPECT_EQ(d->root, "/sys/fs/cgroup");
  // A container's namespace: the cgroup is the root of what is mounted.
  d = cgroup_memory_dir("0::/\n", v2_mount);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->path, "/sys/fs/cgroup");
  // Hybrid: memory is bound to the v1 hierarchy, which is used.
  d = cgroup_memory_dir("9:devices:/a\n4:memory:/process_api/42\n0::/\n", v1_mount + v2_mount);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->version, 1);
  EXPECT_EQ(d->path, "/sys/fs/cgroup/memory/process_api/42");
  EXPECT_EQ(d->root, "/sys/fs/cgroup/memory");
  // A v1 mount of the container's own cgroup (its root is that cgroup's path).
  d = cgroup_memory_dir("4:memory:/docker/abc\n", "40 31 0:32 /docker/abc /sys/fs/cgroup/memory ro - cgroup cgroup rw,memory\n");
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->path, "/sys/fs/cgroup/memory");
  // Not mounted, or outside the mount.
  EXPECT_FALSE(cgroup_memory_dir("0::/x\n", v1_mount).has_value());
  EXPECT_FALSE(cgroup_memory_dir("4:memory:/elsewhere\n",
                                 "40 31 0:32 /docker/abc /sys/fs/cgroup/memory ro - cgroup cgroup rw,memory\n")
                   .has_value());
}

// This machine's own figures: MemAvailable is always there on Linux 3.14 and later, and
// no bound exceeds the machine's memory (or, for the address space, the limit).
TEST(MemoryAdmission, ThisMachineReportsItsAvailableMemory) {
  const AvailableMemory a = available_host_memory();
  ASSERT_FALSE(a.limits.empty());
  EXPECT_EQ(a.limits[0].source, "MemAvailable (/proc/meminfo)");
  std::ifstream in("/proc/meminfo");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string meminfo = ss.str();
  const auto total_at = meminfo.find("MemTotal:");
  ASSERT_NE(total_at, std::string::npos);
  const double total = std::stod(meminfo.substr(total_at + 9)) * 1024.0;
  EXPECT_GT(a.limits[0].bytes, 0.0);
  EXPECT_LE(a.limits[0].bytes, total);
  ASSERT_TRUE(a.binding().has_value());
  for (const MemoryLimit& l : a.limits) EXPECT_LE(a.binding()->bytes, l.bytes) << l.source;
}

// The estimate's tables, dense parameters and optimizer slots are exactly what the CPU
// engine allocates for its state, for every optimizer, row dtype and architecture.
TEST(MemoryAdmission, EstimateMatchesTheEngineState) {
  const std::string tables = "num_dense = 5\nembedding_dim = 8\ntable_rows = [1000, 300, 77]\ntop_mlp = [16, 1]\n";
  for (const char* arch : {"arch = \"dlrm\"\nbottom_mlp = [12, 8]\n",
                           "arch = \"dcnv2\"\nbottom_mlp = [12, 8]\ncross_layers = 2\n",
                           "arch = \"dcnv2\"\nbottom_mlp = [8]\ncross_layers = 3\ncross_rank = 4\n"})
    for (const char* sparse : {"sgd", "adagrad", "rowwise_adagrad"})
      for (const char* dense : {"sgd", "adagrad", "adam"})
        for (const char* rows : {"fp32", "bf16"}) {
          const RunConfig cfg = config_of(std::string("[model]\n") + arch + tables + "row_dtype = \"" + rows +
                                          "\"\n[optim]\nsparse = \"" + sparse + "\"\ndense = \"" + dense + "\"\n");
          const std::string what = std::string(arch) + sparse + " " + dense + " " + rows;
          auto model = make_cpu_model(cfg.model, cfg.optim);
          double state = 0.0;
          for (const NamedTensor& t : model->state())
            if (t.name != "step") state += static_cast<double>(t.tensor.nbytes());
          const std::vector<MemoryConsumer> c = cpu_engine_host_memory(cfg);
          const double estimated = consumer_bytes(c, "table '") + consumer_bytes(c, "dense parameters") +
                                   consumer_bytes(c, "dense optimizer state");
          EXPECT_DOUBLE_EQ(estimated, state) << what;
          EXPECT_DOUBLE_EQ(consumer_bytes(c, "dense gradients"), consumer_bytes(c, "dense parameters")) << what;
        }
}

TEST(MemoryAdmission, RefusalNamesTheLargestConsumersAndTheSource) {
  RunConfig cfg = config_of("[model]\nembedding_dim = 8\ntable_rows = [10]\nbottom_mlp = [8]\ntop_mlp = [1]\n");
  const double gib = 1024.0 * 1024.0 * 1024.0;
  const std::vector<MemoryConsumer> consumers = {{"table 'a' rows", MemorySpace::host, 3 * gib},
                                                 {"small", MemorySpace::host, 1024.0},
                                                 {"table 'b' rows", MemorySpace::host, 5 * gib},
                                                 {"table 'c' rows", MemorySpace::host, 4 * gib},
                                                 {"table 'd' rows", MemorySpace::host, 1 * gib}};
  AvailableMemory available;
  available.limits = {{"MemAvailable (/proc/meminfo)", 20 * gib}, {"cgroup v2 /sys/fs/cgroup/job", 8 * gib}};
  try {
    admit_host_memory(consumers, available, cfg);
    FAIL() << "13 GiB admitted into 8 GiB";
  } catch (const OutOfMemoryError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("8.00 GiB is available: cgroup v2 /sys/fs/cgroup/job"), std::string::npos) << m;
    EXPECT_NE(m.find("MemAvailable (/proc/meminfo): 20.00 GiB"), std::string::npos) << m;
    const auto b = m.find("table 'b' rows 5.00 GiB (5368709120 bytes)"), c = m.find("table 'c' rows 4.00 GiB"),
               a = m.find("table 'a' rows 3.00 GiB");
    ASSERT_NE(b, std::string::npos) << m;
    ASSERT_NE(c, std::string::npos) << m;
    ASSERT_NE(a, std::string::npos) << m;
    EXPECT_LT(b, c);
    EXPECT_LT(c, a);
    EXPECT_EQ(m.find("table 'd'"), std::string::npos) << "three consumers are named: " << m;
    EXPECT_NE(m.find("model.row_dtype"), std::string::npos) << m;
    EXPECT_NE(m.find("data.prefetch_batches"), std::string::npos) << m;
  }
  // What fits, margins included, passes; so does anything when no bound is known.
  available.limits = {{"MemAvailable (/proc/meminfo)", 14 * gib}};
  EXPECT_NO_THROW(admit_host_memory(consumers, available, cfg));
  available.limits = {{"MemAvailable (/proc/meminfo)", 13.2 * gib}};
  EXPECT_THROW(admit_host_memory(consumers, available, cfg), OutOfMemoryError) << "the margin is kept";
  EXPECT_NO_THROW(admit_host_memory(consumers, AvailableMemory{}, cfg));
}

// Per-batch and data consumers scale with the batch, the prefetch depth and the
// evaluation set as the engine's buffers do.
TEST(MemoryAdmission, BatchPipelineAndEvaluationTerms) {
  const std::string model = "[model]\nnum_dense = 4\nembedding_dim = 8\ntable_rows = [100, 100]\n"
                            "table_hotness = [1, 3]\nbottom_mlp = [8]\ntop_mlp = [4, 1]\n";
  const auto terms = [&](const std::string& extra) {
    return cpu_engine_host_memory(parse_run_config(model + extra, "test.toml"));
  };
  const auto base = terms("[train]\nbatch_size = 100\neval_at_end = false\n[data]\nprefetch_batches = 1\n");
  // A batch of 100: dense 100x4, labels 100, offsets 2x100+1, ids 100x(1+3): 4 bytes each.
  const double batch = (400.0 + 100 + 201 + 400) * 4;
  EXPECT_DOUBLE_EQ(consumer_bytes(base, "data pipeline"), 2 * batch);
  EXPECT_DOUBLE_EQ(consumer_bytes(base, "embedding backward sort buffers"), (3.0 * 400 + 2) * 8);
  EXPECT_DOUBLE_EQ(consumer_bytes(base, "evaluation"), 0.0);
  const auto deeper = terms("[train]\nbatch_size = 100\neval_at_end = false\n[data]\nprefetch_batches = 7\n");
  EXPECT_DOUBLE_EQ(consumer_bytes(deeper, "data pipeline"), 8 * batch);
  const auto act = consumer_bytes(base, "activations");
  const auto act2 = consumer_bytes(terms("[train]\nbatch_size = 200\neval_at_end = false\n"), "activations");
  EXPECT_DOUBLE_EQ(act2, 2 * act);
  // Evaluation: the synthetic set's scores, and the workspace at the larger eval batch.
  const auto eval = terms("[train]\nbatch_size = 100\neval_batch_size = 400\n[data.synthetic]\neval_samples = 1000\n");
  EXPECT_DOUBLE_EQ(consumer_bytes(eval, "activations"), 4 * act);
  EXPECT_GT(consumer_bytes(eval, "evaluation"), 1000.0 * 12);
}

// The GPU engine's check uses the planner's memory model of the config's recipe; the
// runtime context is already made when the free memory is measured, and the checkpoint
// mirrors only count when the run writes checkpoints.
TEST(MemoryAdmission, DeviceMemoryFromThePlannersModel) {
  RunConfig cfg = config_of("[model]\nembedding_dim = 64\ntable_rows = [4000000, 2000000, 1000]\n"
                            "bottom_mlp = [64]\ntop_mlp = [32, 1]\n");
  const MemoryEstimate e = gpu_engine_memory(cfg, "NVIDIA Test GPU");
  double context = 0.0, mirrors = 0.0;
  for (const MemoryConsumer& c : e.consumers) {
    if (c.name.rfind("runtime context", 0) == 0) context += c.bytes;
    if (c.name.rfind("host mirrors", 0) == 0) mirrors += c.bytes;
  }
  EXPECT_GT(context, 0.0);
  EXPECT_EQ(mirrors, 0.0) << "no checkpoints, no mirrors";
  EXPECT_GT(consumer_bytes(e.consumers, "data pipeline"), 0.0);
  cfg.train.checkpoint_dir = "/tmp/ckpt";
  double with_mirrors = 0.0;
  for (const MemoryConsumer& c : gpu_engine_memory(cfg, "NVIDIA Test GPU").consumers)
    if (c.name.rfind("host mirrors", 0) == 0) with_mirrors += c.bytes;
  EXPECT_GT(with_mirrors, 6e6 * 64 * 4) << "every row is mirrored";

  const double needed = e.device_bytes() - context;
  EXPECT_NO_THROW(admit_device_memory(e, needed, "NVIDIA Test GPU", cfg));
  try {
    admit_device_memory(e, needed - 1.0, "NVIDIA Test GPU", cfg);
    FAIL() << "a byte short is admitted";
  } catch (const OutOfMemoryError& err) {
    const std::string m = err.what();
    EXPECT_NE(m.find("of device memory on NVIDIA Test GPU"), std::string::npos) << m;
    EXPECT_NE(m.find("embedding rows (3 tables in HBM, fp32, dim 64)"), std::string::npos) << m;
    EXPECT_NE(m.find("model.host_tables"), std::string::npos) << m;
  }
}
