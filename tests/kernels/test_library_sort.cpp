// The vendor library's radix sort (kernels/library_sort.h) against the engine's
// (kernels/radix_sort.h) and a host stable sort: the same pairs in the same order, on
// fresh random keys, with poisoned outputs and stale scratch, at counts that are no
// multiple of either sort's tile.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "../gpu/device_test_support.h"
#include "core/error.h"
#include "core/rng.h"
#include "embedding_test_data.h"
#include "gpu/graph.h"
#include "gpu/stream.h"
#include "kernels/embedding_bag_backward.h"
#include "kernels/library_sort.h"
#include "kernels/radix_sort.h"
#include "kernels/radix_sort_geometry.h"
#include "kernels/sort_pairs.h"

namespace hetrec {
namespace {

constexpr uint32_t kPoison = 0xDEADBEEFu;

struct Sorted {
  std::vector<uint32_t> keys, values;  // the whole capacity of the result buffers
};

// Sorts keys (the capacity) with values i ^ salt, the first n pairs by count on the device
// (or all, with the count on the host), with the alternates poisoned and the scratch
// stale.
Sorted run_sort(kernels::SortImpl impl, const std::vector<uint32_t>& keys, int64_t n, int key_bits, bool device_count,
                uint32_t salt) {
  const auto capacity = static_cast<int64_t>(keys.size());
  std::vector<uint32_t> values(keys.size());
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<uint32_t>(i) ^ salt;
  gpu::DeviceBuffer k = testing::to_device(keys), v = testing::to_device(values);
  gpu::DeviceBuffer k2 = testing::to_device(std::vector<uint32_t>(keys.size(), kPoison));
  gpu::DeviceBuffer v2 = testing::to_device(std::vector<uint32_t>(keys.size(), kPoison));
  gpu::DeviceBuffer count = testing::to_device(std::vector<int32_t>{static_cast<int32_t>(n)});
  const std::size_t ws_bytes = kernels::sort_workspace_bytes(capacity);
  gpu::DeviceBuffer ws = testing::to_device(std::vector<uint8_t>(ws_bytes, 0xFF));
  const kernels::SortBuffers bufs{k.as<uint32_t>(), v.as<uint32_t>(), k2.as<uint32_t>(), v2.as<uint32_t>()};
  const bool primary = kernels::sort_pairs(impl, bufs, device_count ? count.as<int32_t>() : nullptr, capacity,
                                           key_bits, ws.get(), ws_bytes, nullptr);
  return {testing::to_host<uint32_t>(primary ? k : k2, keys.size()),
          testing::to_host<uint32_t>(primary ? v : v2, keys.size())};
}

// Random full 32-bit keys (bits above key_bits differ between keys that tie), or, when
// `skewed`, keys from a pool of 64 where key j has probability about 2^-(j+1) (long runs
// of ties: the order of equal keys' values shows).
std::vector<uint32_t> random_keys(int64_t count, bool skewed, Rng& rng) {
  std::vector<uint32_t> pool(64);
  for (auto& p : pool) p = rng.next_u32();
  std::vector<uint32_t> keys(static_cast<std::size_t>(count));
  for (auto& k : keys)
    k = skewed ? pool[static_cast<std::size_t>(std::countr_zero(rng.next_u64() | (uint64_t{1} << 63)))]
               : rng.next_u32();
  return keys;
}

void expect_same_sort(const std::vector<uint32_t>& keys, int64_t n, int key_bits, bool device_count, Rng& rng) {
  SCOPED_TRACE("key_bits=" + std::to_string(key_bits) + " n=" + std::to_string(n) +
               " capacity=" + std::to_string(keys.size()) + (device_count ? " (device count)" : " (host count)"));
  const uint32_t salt = rng.next_u32();
  const Sorted engine = run_sort(kernels::SortImpl::engine, keys, n, key_bits, device_count, salt);
  const Sorted library = run_sort(kernels::SortImpl::library, keys, n, key_bits, device_count, salt);
  // The stable order on the low key_bits bits, on the host.
  const uint32_t mask = key_bits == 32 ? 0xFFFFFFFFu : ((1u << key_bits) - 1u);
  std::vector<uint32_t> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return (keys[a] & mask) < (keys[b] & mask); });
  for (std::size_t i = 0; i < order.size(); ++i) {
    ASSERT_EQ(library.keys[i], keys[order[i]]) << "library key at i=" << i;
    ASSERT_EQ(library.values[i], order[i] ^ salt) << "library value at i=" << i;
    ASSERT_EQ(engine.keys[i], library.keys[i]) << "engine key at i=" << i;
    ASSERT_EQ(engine.values[i], library.values[i]) << "engine value at i=" << i;
  }
  // Past the count the library's result holds the all-ones padding.
  for (std::size_t i = order.size(); i < keys.size(); ++i)
    ASSERT_EQ(library.keys[i], 0xFFFFFFFFu) << "padding at i=" << i;
}

TEST(LibrarySort, SameOrderAsTheEngineSortWithDeviceCount) {
  HETREC_REQUIRE_GPU();
  Rng rng(71);
  // One to four passes, last passes of fewer than 8 bits; counts off every tile (the
  // engine's 4096, CUB's onesweep tiles) and the library's single-tile path (small n).
  for (int key_bits : {1, 7, 12, 17, 28, 32}) {
    for (int64_t n : {int64_t{1}, int64_t{333}, int64_t{4097}, int64_t{8065}, int64_t{123457}, int64_t{1000003}}) {
      for (bool skewed : {false, true}) expect_same_sort(random_keys(n + 777, skewed, rng), n, key_bits, true, rng);
    }
  }
}

TEST(LibrarySort, SameOrderAsTheEngineSortWithHostCount) {
  HETREC_REQUIRE_GPU();
  Rng rng(72);
  for (int key_bits : {9, 28}) {
    for (int64_t n : {int64_t{2}, int64_t{5001}, int64_t{3000017}})
      for (bool skewed : {false, true}) expect_same_sort(random_keys(n, skewed, rng), n, key_bits, false, rng);
  }
}

TEST(LibrarySort, PaddedKeysTieWithAllOnesKeysAndStayLast) {
  HETREC_REQUIRE_GPU();
  Rng rng(73);
  // Real keys whose low bits are all ones tie with the padding: they must come before it.
  for (int key_bits : {5, 28}) {
    std::vector<uint32_t> keys = random_keys(50000, false, rng);
    for (std::size_t i = 0; i < keys.size(); i += 3) keys[i] |= (key_bits == 32 ? 0xFFFFFFFFu : (1u << key_bits) - 1u);
    expect_same_sort(keys, 40000, key_bits, true, rng);
  }
}

// The training step's graph captures the sort once and replays it for every batch: the
// replays sort whatever count the device holds, up to the capacity.
TEST(LibrarySort, CapturedGraphSortsEveryCountUpToTheCapacity) {
  HETREC_REQUIRE_GPU();
  Rng rng(74);
  constexpr int64_t kCapacity = 50000;
  constexpr int kKeyBits = 20;
  constexpr auto kBytes = static_cast<std::size_t>(kCapacity) * sizeof(uint32_t);
  gpu::DeviceBuffer k(kBytes), v(kBytes), k2(kBytes), v2(kBytes), count(sizeof(int32_t));
  const std::size_t ws_bytes = kernels::sort_workspace_bytes(kCapacity);
  gpu::DeviceBuffer ws(ws_bytes);
  const kernels::SortBuffers bufs{k.as<uint32_t>(), v.as<uint32_t>(), k2.as<uint32_t>(), v2.as<uint32_t>()};
  gpu::Stream stream;
  gpu::GraphExec graph;
  graph.begin_capture(stream.get());
  const bool primary = kernels::sort_pairs(kernels::SortImpl::library, bufs, count.as<int32_t>(), kCapacity, kKeyBits,
                                           ws.get(), ws_bytes, stream.get());
  graph.end_capture(stream.get());
  for (int64_t n : {kCapacity, int64_t{31337}, int64_t{1}}) {
    SCOPED_TRACE("n=" + std::to_string(n));
    const std::vector<uint32_t> keys = random_keys(kCapacity, n == 31337, rng);
    const uint32_t salt = rng.next_u32();
    std::vector<uint32_t> values(keys.size());
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<uint32_t>(i) ^ salt;
    const auto n32 = static_cast<int32_t>(n);
    gpu::memcpy_sync(k.get(), keys.data(), kBytes, gpu::CopyKind::host_to_device);
    gpu::memcpy_sync(v.get(), values.data(), kBytes, gpu::CopyKind::host_to_device);
    gpu::memcpy_sync(count.get(), &n32, sizeof n32, gpu::CopyKind::host_to_device);
    graph.launch(stream.get());
    stream.synchronize();
    const auto got_k = testing::to_host<uint32_t>(primary ? k : k2, keys.size());
    const auto got_v = testing::to_host<uint32_t>(primary ? v : v2, keys.size());
    constexpr uint32_t kMask = (1u << kKeyBits) - 1u;
    std::vector<uint32_t> order(static_cast<std::size_t>(n));
    std::iota(order.begin(), order.end(), 0u);
    std::stable_sort(order.begin(), order.end(),
                     [&](uint32_t a, uint32_t b) { return (keys[a] & kMask) < (keys[b] & kMask); });
    for (std::size_t i = 0; i < order.size(); ++i) {
      ASSERT_EQ(got_k[i], keys[order[i]]) << "i=" << i;
      ASSERT_EQ(got_v[i], values[order[i]]) << "i=" << i;
    }
  }
}

TEST(LibrarySort, WorkspaceBoundCoversTheLibrarysQuery) {
  HETREC_REQUIRE_GPU();
  for (int64_t capacity : {int64_t{1}, int64_t{100}, int64_t{4095}, int64_t{4097}, int64_t{20000}, int64_t{1} << 20,
                           int64_t{28050000}, int64_t{300000000}}) {
    for (int key_bits : {1, 8, 28, 32}) {
      EXPECT_LE(kernels::library_sort_workspace_query(capacity, key_bits), kernels::sort_workspace_bytes(capacity))
          << "capacity=" << capacity << " key_bits=" << key_bits;
    }
  }
}

TEST(LibrarySort, RefusesBadArgumentsAndASmallWorkspace) {
  HETREC_REQUIRE_GPU();
  gpu::DeviceBuffer k(4096 * 4), v(4096 * 4), k2(4096 * 4), v2(4096 * 4);
  const kernels::SortBuffers bufs{k.as<uint32_t>(), v.as<uint32_t>(), k2.as<uint32_t>(), v2.as<uint32_t>()};
  gpu::DeviceBuffer ws(1 << 20);
  EXPECT_THROW(kernels::library_sort_pairs(bufs, nullptr, 4096, 33, ws.get(), 1 << 20, nullptr), InternalError);
  EXPECT_THROW(kernels::library_sort_pairs(bufs, nullptr, int64_t{1} << 31, 28, ws.get(), 1 << 20, nullptr),
               InternalError);
  const std::size_t need = kernels::library_sort_workspace_query(4096, 28);
  ASSERT_GT(need, 0u);
  try {
    kernels::library_sort_pairs(bufs, nullptr, 4096, 28, ws.get(), need - 1, nullptr);
    ADD_FAILURE() << "a workspace one byte short was accepted";
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("bytes of scratch"), std::string::npos) << e.what();
  }
}

std::vector<unsigned char> download(const gpu::DeviceBuffer& b, std::size_t bytes) {
  std::vector<unsigned char> out(bytes);
  gpu::memcpy_sync(out.data(), b.get(), bytes, gpu::CopyKind::device_to_host);
  return out;
}

// The whole backward and row-wise Adagrad update (stochastic rounding of bf16 rows
// included) with either sort: the same rows and accumulators bit for bit. Hot rows
// (table 0 draws from 8) make long runs of equal keys, whose gradient sums depend on the
// order of their values; the capacity exceeds the id count, so the library pads.
TEST(LibrarySort, EmbeddingBackwardIsBitIdenticalWithEitherSort) {
  HETREC_REQUIRE_GPU();
  for (DType dtype : {DType::f32, DType::bf16}) {
    SCOPED_TRACE(dtype_name(dtype));
    constexpr int kDim = 16;
    constexpr int64_t kBatch = 3001;
    const ModelConfig m = testing::embedding_model(kDim, dtype, 91);
    const int num = m.num_tables();
    const Batch b = testing::random_batch(m, kBatch, 92);
    std::vector<float> grad(static_cast<std::size_t>(kBatch * num * kDim));
    Rng rng(93);
    for (float& g : grad) g = static_cast<float>(rng.normal());
    const gpu::DeviceBuffer dgrad = testing::to_device(grad);
    const testing::DeviceBatchCopy db(b, 333);
    const gpu::DeviceBuffer scalars = testing::to_device(
        std::vector<kernels::StepScalars>{kernels::make_step_scalars(0.05f, 0.0, 0.9, 0.999, 17)});
    const std::size_t ws_bytes = kernels::embedding_backward_workspace_bytes(db.bags.max_ids, kDim);
    std::vector<std::vector<unsigned char>> rows, state;
    std::vector<unsigned char> initial;
    for (kernels::SortImpl impl : {kernels::SortImpl::engine, kernels::SortImpl::library}) {
      testing::DeviceTables dev(m);
      const auto total = static_cast<std::size_t>(dev.view.total_rows);
      const std::size_t row_bytes = total * kDim * dtype_size(dtype);
      if (initial.empty()) initial = download(dev.weights, row_bytes);
      gpu::DeviceBuffer acc = testing::to_device(std::vector<float>(total, 0.01f));
      gpu::DeviceBuffer ws = testing::to_device(std::vector<uint8_t>(ws_bytes, 0xFF));
      kernels::SparseOptimizerParams p;
      p.kind = kernels::SparseOptimizerKind::rowwise_adagrad;
      p.eps = 1e-6f;
      p.accumulators = acc.as<float>();
      p.seed = m.init_seed;
      p.scalars = scalars.as<kernels::StepScalars>();
      p.sort = impl;
      kernels::embedding_bag_backward_update(dev.view, db.bags, dgrad.as<float>(), num * kDim, p, ws.get(), ws_bytes,
                                             nullptr);
      rows.push_back(download(dev.weights, row_bytes));
      state.push_back(download(acc, total * sizeof(float)));
    }
    ASSERT_NE(rows[0], initial) << "the update changed nothing";
    EXPECT_EQ(rows[1], rows[0]) << "rows after the library sort";
    EXPECT_EQ(state[1], state[0]) << "accumulators after the library sort";
  }
}

TEST(LibrarySort, AutomaticIsTheLibraryOnCuda) {
  EXPECT_EQ(kernels::resolved_sort(kernels::SortImpl::automatic), kernels::SortImpl::library);
  EXPECT_EQ(kernels::resolved_sort(kernels::SortImpl::engine), kernels::SortImpl::engine);
  EXPECT_EQ(kernels::resolved_sort(kernels::SortImpl::library), kernels::SortImpl::library);
}

}  // namespace
}  // namespace hetrec
