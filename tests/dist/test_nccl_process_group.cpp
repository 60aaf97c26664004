// The NCCL process group against the host group it is bootstrapped from (MPI under
// mpirun, else the single-process group): the same random inputs go through both, the
// device results (outputs poisoned with NaN first) must equal the host results. Skips
// without a GPU. Runs with world size 1 directly and under `mpirun -np N` (one GPU per
// rank).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "core/rng.h"
#include "dist/nccl_process_group.h"
#include "dist/process_group.h"
#include "gpu/collectives.h"
#include "gpu/device.h"
#include "gpu/memory.h"
#include "gpu/stream.h"

namespace hetrec::dist {
namespace {

constexpr double kTimeoutS = 60.0;

bool skip_without_device() { return !gpu::has_device(); }

template <class T>
std::vector<T> random_values(int rank, int64_t n, uint64_t salt) {
  Rng rng(4321 + salt, static_cast<uint64_t>(rank));
  std::vector<T> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = static_cast<T>(2.0 * rng.uniform() - 1.0);
  return v;
}

// A device copy of `host`, and back.
template <class T>
gpu::DeviceBuffer to_device(const std::vector<T>& host) {
  gpu::DeviceBuffer d(std::max<std::size_t>(1, host.size() * sizeof(T)));
  if (!host.empty()) gpu::memcpy_sync(d.get(), host.data(), host.size() * sizeof(T), gpu::CopyKind::host_to_device);
  return d;
}
template <class T>
std::vector<T> to_host(const gpu::DeviceBuffer& d, std::size_t n) {
  std::vector<T> h(n);
  if (n > 0) gpu::memcpy_sync(h.data(), d.get(), n * sizeof(T), gpu::CopyKind::device_to_host);
  return h;
}
template <class T>
gpu::DeviceBuffer poisoned(std::size_t n) {
  return to_device(std::vector<T>(n, std::numeric_limits<T>::quiet_NaN()));
}

TEST(NcclProcessGroup, AllReduceMatchesTheHostGroup) {
  if (skip_without_device()) GTEST_SKIP() << "no GPU";
  auto host = make_process_group(kTimeoutS);
  NcclProcessGroup device_group(*host, kTimeoutS);
  EXPECT_EQ(device_group.rank(), host->rank());
  EXPECT_EQ(device_group.size(), host->size());
  EXPECT_NE(device_group.describe().find("NCCL"), std::string::npos) << device_group.describe();
  const int64_t n = 100003;
  auto f = random_values<float>(host->rank(), n, 1);
  auto d = random_values<double>(host->rank(), n, 2);
  auto df = to_device(f);
  auto dd = to_device(d);
  device_group.all_reduce_sum(std::span<float>(df.as<float>(), static_cast<std::size_t>(n)), "device_group all_reduce float");
  device_group.all_reduce_sum(std::span<double>(dd.as<double>(), static_cast<std::size_t>(n)), "device_group all_reduce double");
  host->all_reduce_sum(std::span<float>(f), "host all_reduce float");
  host->all_reduce_sum(std::span<double>(d), "host all_reduce double");
  const auto gf = to_host<float>(df, static_cast<std::size_t>(n));
  const auto gd = to_host<double>(dd, static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    // Two ranks add exactly as MPI does; more may differ in summation order.
    EXPECT_NEAR(gf[static_cast<std::size_t>(i)], f[static_cast<std::size_t>(i)], host->size() <= 2 ? 0.0 : 1e-6);
    EXPECT_NEAR(gd[static_cast<std::size_t>(i)], d[static_cast<std::size_t>(i)], host->size() <= 2 ? 0.0 : 1e-14);
  }
  // Non-blocking form.
  auto g = random_values<float>(host->rank(), 777, 3);
  auto dg = to_device(g);
  auto pending = device_group.all_reduce_sum_start(std::span<float>(dg.as<float>(), g.size()), "device_group bucket");
  pending->wait();
  host->all_reduce_sum(std::span<float>(g), "host bucket");
  const auto gg = to_host<float>(dg, g.size());
  for (std::size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(gg[i], g[i], host->size() <= 2 ? 0.0 : 1e-6);
}

TEST(NcclProcessGroup, AllToAllVAllGatherBroadcastBarrierMatchTheHostGroup) {
  if (skip_without_device()) GTEST_SKIP() << "no GPU";
  auto host = make_process_group(kTimeoutS);
  NcclProcessGroup device_group(*host, kTimeoutS);
  const int n = host->size(), me = host->rank();
  // Rank s sends (s + 2 d + 1) * 5 random floats to rank d.
  std::vector<int64_t> send_bytes(static_cast<std::size_t>(n)), recv_bytes(static_cast<std::size_t>(n));
  std::vector<float> send;
  int64_t recv_total = 0;
  for (int d = 0; d < n; ++d) {
    const auto part = random_values<float>(me * 100 + d, (me + 2 * d + 1) * 5, 4);
    send.insert(send.end(), part.begin(), part.end());
    send_bytes[static_cast<std::size_t>(d)] = static_cast<int64_t>(part.size() * sizeof(float));
    recv_bytes[static_cast<std::size_t>(d)] = (d + 2 * me + 1) * 5 * static_cast<int64_t>(sizeof(float));
    recv_total += (d + 2 * me + 1) * 5;
  }
  std::vector<float> want(static_cast<std::size_t>(recv_total));
  host->all_to_all_v(send.data(), send_bytes, want.data(), recv_bytes, "host all_to_all_v");
  auto dsend = to_device(send);
  auto drecv = poisoned<float>(static_cast<std::size_t>(recv_total));
  device_group.all_to_all_v(dsend.get(), send_bytes, drecv.get(), recv_bytes, "device_group all_to_all_v");
  EXPECT_EQ(to_host<float>(drecv, want.size()), want);

  const auto block = random_values<double>(me, 33, 5);
  std::vector<double> gathered(block.size() * static_cast<std::size_t>(n));
  host->all_gather(block.data(), static_cast<int64_t>(block.size() * sizeof(double)), gathered.data(), "host all_gather");
  auto dblock = to_device(block);
  auto dgathered = poisoned<double>(gathered.size());
  device_group.all_gather(dblock.get(), static_cast<int64_t>(block.size() * sizeof(double)), dgathered.get(), "device_group all_gather");
  EXPECT_EQ(to_host<double>(dgathered, gathered.size()), gathered);

  const int root = n - 1;
  const auto from_root = random_values<float>(root, 41, 6);
  auto dbcast = me == root ? to_device(from_root) : poisoned<float>(from_root.size());
  device_group.broadcast(dbcast.get(), static_cast<int64_t>(from_root.size() * sizeof(float)), root, "device_group broadcast");
  EXPECT_EQ(to_host<float>(dbcast, from_root.size()), from_root);
  device_group.barrier("device_group barrier");
}

// 32-bit integer sums (counts) through the communicator itself: every rank's random
// integers add up exactly.
TEST(NcclCommunicator, AllReduceSumOfInt32IsExact) {
  if (skip_without_device()) GTEST_SKIP() << "no GPU";
  auto host = make_process_group(kTimeoutS);
  gpu::set_device(host->rank() % gpu::device_count());  // one device per rank on one host
  gpu::CollectivesId id{};
  if (host->rank() == 0) id = gpu::make_collectives_id();
  host->broadcast(id.data(), static_cast<int64_t>(id.size()), 0, "collectives id");
  gpu::Communicator comm(host->size(), host->rank(), id);
  gpu::Stream stream;
  const int64_t n = 10007;
  std::vector<int32_t> want(static_cast<std::size_t>(n), 0), mine;
  for (int r = 0; r < host->size(); ++r) {
    Rng rng(99, static_cast<uint64_t>(r));
    for (int64_t i = 0; i < n; ++i) {
      const auto v = static_cast<int32_t>(rng.below(1u << 20)) - (1 << 19);
      want[static_cast<std::size_t>(i)] += v;
      if (r == host->rank()) mine.push_back(v);
    }
  }
  auto data = to_device(mine);
  gpu::synchronize_device();  // the upload is complete before the collective's stream reads it
  comm.all_reduce_sum(data.get(), mine.size(), gpu::ReduceType::i32, stream.get());
  comm.wait(stream.get(), "all_reduce i32", kTimeoutS);
  EXPECT_EQ(to_host<int32_t>(data, mine.size()), want);
}

}  // namespace
}  // namespace hetrec::dist
