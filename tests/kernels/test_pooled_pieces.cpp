// Gather of pooled-embedding pieces into X and the scatter of X's gradient back into
// pieces, against host references (the pieces applied in list order in float, and a
// double-precision sum), on random pieces of every kind: whole slots, row_wise partial
// sums (3 pieces adding into one slot, written first or added onto X), column blocks of
// even widths, partial and empty slots; strides wider than the pieces; batches that are
// no multiple of a block's samples. Outputs are poisoned with NaN first; columns no
// piece covers must keep their values. With bf16 exchanges: every other piece's source
// holds bf16 (widened exactly by the gather) and every other gradient piece receives
// bf16 (rounded to nearest even by the scatter).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/rng.h"
#include "gpu/event.h"
#include "kernels/pooled_pieces.h"
#include "../gpu/device_test_support.h"

namespace hetrec {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

std::vector<float> normals(std::size_t n, Rng& rng) {
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(rng.normal());
  return v;
}

// Uniform in [-1, 1): cheaper to draw for the large buffers.
std::vector<float> uniforms(std::size_t n, Rng& rng) {
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(2.0 * rng.uniform() - 1.0);
  return v;
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof(float)) == 0; }

// A piece with its host source (batch x src_stride; the gap past width is random too).
struct HostPiece {
  kernels::PooledPiece piece;
  std::vector<float> src;
};

// Random pieces for num_slots slots of dim columns (dim even, >= 8), cycling through the
// kinds of slot a sharding plan makes, in slot order.
std::vector<HostPiece> random_pieces(int num_slots, int dim, int64_t batch, Rng& rng) {
  std::vector<HostPiece> out;
  const auto add = [&](int slot, int col_begin, int width, int accumulate) {
    HostPiece h;
    h.piece.slot = slot;
    h.piece.col_begin = col_begin;
    h.piece.width = width;
    h.piece.accumulate = accumulate;
    h.piece.src_stride = width + static_cast<int64_t>(rng.below(7));  // wider than the piece
    h.src = normals(static_cast<std::size_t>(batch * h.piece.src_stride), rng);
    out.push_back(std::move(h));
  };
  for (int t = 0; t < num_slots; ++t) {
    switch (t % 6) {
      case 0: add(t, 0, dim, 0); break;  // table_wise / replicated: the whole slot
      case 1:                             // row_wise: partial sums of 3 ranks, the first written
        add(t, 0, dim, 0);
        add(t, 0, dim, 1);
        add(t, 0, dim, 1);
        break;
      case 2:  // row_wise onto what X holds: all 3 add
        for (int k = 0; k < 3; ++k) add(t, 0, dim, 1);
        break;
      case 3: {  // column_wise: blocks of random even widths covering the slot
        int c = 0;
        while (c < dim) {
          const int remaining = dim - c;
          int w = 2 * (1 + static_cast<int>(rng.below(static_cast<uint64_t>(dim / 4))));
          if (w > remaining) w = remaining;
          add(t, c, w, 0);
          c += w;
        }
        break;
      }
      case 4: {  // a column block only: the rest of the slot is left alone
        const int begin = 2 * static_cast<int>(rng.below(static_cast<uint64_t>(dim / 4)));
        add(t, begin, dim / 2, 0);
        break;
      }
      default: break;  // no piece: the slot is left alone
    }
  }
  return out;
}

// What a column of X holds before the gather: NaN where the first piece writes (it must
// be overwritten), a random value where it adds or where no piece reaches.
struct GatherCase {
  int num_slots = 0, dim = 0;
  int64_t batch = 0, x_stride = 0, x_offset = 0;
};

// The bf16 bit patterns of v (round to nearest even), and v replaced by their values.
std::vector<uint16_t> round_to_bf16(std::vector<float>& v) {
  std::vector<uint16_t> bits(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    bits[i] = f32_to_bf16(v[i]);
    v[i] = bf16_to_f32(bits[i]);
  }
  return bits;
}

void run_gather_case(const GatherCase& c, uint64_t seed, bool bf16_sources = false) {
  Rng rng(seed);
  std::vector<HostPiece> host = random_pieces(c.num_slots, c.dim, c.batch, rng);
  std::vector<gpu::DeviceBuffer> sources;
  std::vector<kernels::PooledPiece> pieces;
  std::vector<int> slot_begin(static_cast<std::size_t>(c.num_slots) + 1, 0);
  for (std::size_t k = 0; k < host.size(); ++k) {
    HostPiece& h = host[k];
    kernels::PooledPiece p = h.piece;
    if (bf16_sources && k % 2 == 1) {
      // The host reference then reads the values the bf16 patterns hold.
      sources.push_back(testing::to_device(round_to_bf16(h.src)));
      p.src_bf16 = 1;
    } else {
      sources.push_back(testing::to_device(h.src));
    }
    p.src = sources.back().get();
    pieces.push_back(p);
    ++slot_begin[static_cast<std::size_t>(p.slot) + 1];
  }
  for (int t = 0; t < c.num_slots; ++t) slot_begin[static_cast<std::size_t>(t) + 1] += slot_begin[static_cast<std::size_t>(t)];

  // First piece reaching each column of a slot: -1 none, 0 writes, 1 adds.
  const int row = c.num_slots * c.dim;
  std::vector<int> first_kind(static_cast<std::size_t>(row), -1);
  for (const HostPiece& h : host)
    for (int e = 0; e < h.piece.width; ++e) {
      int& k = first_kind[static_cast<std::size_t>(h.piece.slot * c.dim + h.piece.col_begin + e)];
      if (k < 0) k = h.piece.accumulate;
    }
  // x_offset: X's slots start after other features of the row (as in the model).
  const int64_t total = c.batch * c.x_stride;
  std::vector<float> x0(static_cast<std::size_t>(total), kNaN);
  for (int64_t b = 0; b < c.batch; ++b)
    for (int col = 0; col < row; ++col)
      if (first_kind[static_cast<std::size_t>(col)] != 0)
        x0[static_cast<std::size_t>(b * c.x_stride + c.x_offset + col)] = static_cast<float>(rng.normal());
  gpu::DeviceBuffer x = testing::to_device(x0);
  gpu::DeviceBuffer dpieces = testing::to_device(pieces);
  gpu::DeviceBuffer dslots = testing::to_device(slot_begin);
  kernels::gather_pooled_pieces(dpieces.as<kernels::PooledPiece>(), dslots.as<int>(), c.num_slots, c.batch,
                                x.as<float>() + c.x_offset, c.x_stride, c.dim, nullptr);
  const std::vector<float> got = testing::to_host<float>(x, static_cast<std::size_t>(total));

  int64_t written = 0;
  for (int64_t b = 0; b < c.batch; ++b) {
    for (int64_t col = 0; col < c.x_stride; ++col) {
      const std::size_t i = static_cast<std::size_t>(b * c.x_stride + col);
      const int64_t in_row = col - c.x_offset;
      if (in_row < 0 || in_row >= row || first_kind[static_cast<std::size_t>(in_row)] < 0) {
        ASSERT_TRUE(same_bits(got[i], x0[i])) << "sample " << b << " column " << col << " is no piece's but changed";
        continue;
      }
      const int t = static_cast<int>(in_row) / c.dim;
      const int d = static_cast<int>(in_row) % c.dim;
      float ref = x0[i];
      double ref_double = x0[i], magnitude = std::fabs(ref_double);
      for (const HostPiece& h : host) {
        const int e = d - h.piece.col_begin;
        if (h.piece.slot != t || e < 0 || e >= h.piece.width) continue;
        const float s = h.src[static_cast<std::size_t>(b * h.piece.src_stride + e)];
        ref = h.piece.accumulate ? ref + s : s;
        ref_double = h.piece.accumulate ? ref_double + s : s;
        magnitude = h.piece.accumulate ? magnitude + std::fabs(s) : std::fabs(s);
      }
      ASSERT_FALSE(std::isnan(got[i])) << "sample " << b << " slot " << t << " column " << d << " not written";
      // The list order in float, exactly; and the exact sum to float rounding.
      ASSERT_TRUE(same_bits(got[i], ref)) << "sample " << b << " slot " << t << " column " << d << ": " << got[i]
                                          << " vs " << ref;
      ASSERT_NEAR(got[i], ref_double, 4 * 0x1.0p-24 * magnitude) << "sample " << b << " slot " << t;
      ++written;
    }
  }
  EXPECT_GT(written, 0);
}

TEST(PooledPieces, GatherAppliesPiecesInListOrder) {
  HETREC_REQUIRE_GPU();
  // Batches below, at and past a block's samples; dims of one warp, of several, and one
  // whose rows do not fill a block; X with a leading gap and padding past the slots.
  run_gather_case({7, 16, 1, 7 * 16, 0}, 11);
  run_gather_case({6, 32, 1001, 6 * 32 + 13, 13}, 12);
  run_gather_case({13, 128, 517, 13 * 128 + 64 + 5, 64}, 13);
  run_gather_case({26, 128, 2049, 26 * 128 + 128, 128}, 14);
  run_gather_case({3, 40, 33, 3 * 40 + 2, 1}, 15);
}

TEST(PooledPieces, GatherWidensBf16Pieces) {
  HETREC_REQUIRE_GPU();
  run_gather_case({7, 16, 1, 7 * 16, 0}, 111, true);
  run_gather_case({6, 32, 1001, 6 * 32 + 13, 13}, 112, true);
  run_gather_case({26, 128, 2049, 26 * 128 + 128, 128}, 114, true);
}

struct ScatterCase {
  int num_slots = 0, dim = 0;
  int64_t batch = 0, g_stride = 0, g_offset = 0;
};

void run_scatter_case(const ScatterCase& c, uint64_t seed, bool bf16_destinations = false) {
  Rng rng(seed);
  // The same kinds of piece as the gather's; several pieces may read the same columns
  // (each row_wise rank gets the whole slot's gradient).
  std::vector<HostPiece> host = random_pieces(c.num_slots, c.dim, c.batch, rng);
  // Pieces in no particular order.
  for (std::size_t i = host.size(); i > 1; --i) std::swap(host[i - 1], host[static_cast<std::size_t>(rng.below(i))]);
  const std::vector<float> g = normals(static_cast<std::size_t>(c.batch * c.g_stride), rng);
  gpu::DeviceBuffer dg = testing::to_device(g);
  std::vector<gpu::DeviceBuffer> dsts;
  std::vector<kernels::PooledGradPiece> pieces;
  // A bf16 NaN pattern poisons the bf16 destinations.
  constexpr uint16_t kBf16NaN = 0x7fc1;
  for (std::size_t k = 0; k < host.size(); ++k) {
    const HostPiece& h = host[k];
    const auto n = static_cast<std::size_t>(c.batch * h.piece.src_stride);
    kernels::PooledGradPiece p;
    p.dst_bf16 = bf16_destinations && k % 2 == 0 ? 1 : 0;
    dsts.push_back(p.dst_bf16 ? testing::to_device(std::vector<uint16_t>(n, kBf16NaN)) : testing::poisoned_floats(n));
    p.dst = dsts.back().get();
    p.dst_stride = h.piece.src_stride;
    p.slot = h.piece.slot;
    p.col_begin = h.piece.col_begin;
    p.width = h.piece.width;
    pieces.push_back(p);
  }
  gpu::DeviceBuffer dpieces = testing::to_device(pieces);
  kernels::scatter_pooled_grads(dpieces.as<kernels::PooledGradPiece>(), static_cast<int>(pieces.size()), c.batch,
                                dg.as<float>() + c.g_offset, c.g_stride, c.dim, nullptr);
  ASSERT_FALSE(pieces.empty());
  for (std::size_t k = 0; k < pieces.size(); ++k) {
    const kernels::PooledGradPiece& p = pieces[k];
    const auto n = static_cast<std::size_t>(c.batch * p.dst_stride);
    std::vector<float> got;
    if (p.dst_bf16) {
      const std::vector<uint16_t> bits = testing::to_host<uint16_t>(dsts[k], n);
      for (std::size_t i = 0; i < n; ++i) {
        // Only the poison is NaN: g holds none.
        got.push_back(bits[i] == kBf16NaN ? kNaN : bf16_to_f32(bits[i]));
      }
    } else {
      got = testing::to_host<float>(dsts[k], n);
    }
    for (int64_t b = 0; b < c.batch; ++b)
      for (int64_t e = 0; e < p.dst_stride; ++e) {
        const float v = got[static_cast<std::size_t>(b * p.dst_stride + e)];
        if (e >= p.width) {
          ASSERT_TRUE(std::isnan(v)) << "piece " << k << " sample " << b << ": wrote past its width";
          continue;
        }
        const float exact = g[static_cast<std::size_t>(b * c.g_stride + c.g_offset + p.slot * c.dim + p.col_begin + e)];
        const double ref = p.dst_bf16 ? bf16_to_f32(f32_to_bf16(exact)) : exact;
        ASSERT_EQ(static_cast<double>(v), ref) << "piece " << k << " (slot " << p.slot << ") sample " << b << " column " << e;
      }
  }
}

TEST(PooledPieces, ScatterCopiesEachPieceOfTheGradient) {
  HETREC_REQUIRE_GPU();
  run_scatter_case({7, 16, 1, 7 * 16, 0}, 21);
  run_scatter_case({6, 32, 1001, 6 * 32 + 13, 13}, 22);
  run_scatter_case({13, 128, 517, 13 * 128 + 64 + 5, 64}, 23);
  run_scatter_case({26, 128, 33, 26 * 128 + 128, 128}, 24);
}

TEST(PooledPieces, ScatterRoundsBf16PiecesToNearestEven) {
  HETREC_REQUIRE_GPU();
  run_scatter_case({7, 16, 1, 7 * 16, 0}, 121, true);
  run_scatter_case({13, 128, 517, 13 * 128 + 64 + 5, 64}, 123, true);
  run_scatter_case({26, 128, 33, 26 * 128 + 128, 128}, 124, true);
}

TEST(PooledPieces, BadShapesAreRejected) {
  // Host-side argument checks: no device work is launched.
  EXPECT_THROW(kernels::gather_pooled_pieces(nullptr, nullptr, 4, 10, nullptr, 4 * 16 - 1, 16, nullptr), InternalError);
  EXPECT_THROW(kernels::gather_pooled_pieces(nullptr, nullptr, 4, 10, nullptr, 64, 0, nullptr), InternalError);
  EXPECT_THROW(kernels::scatter_pooled_grads(nullptr, 70000, 10, nullptr, 64, 16, nullptr), InternalError);
  EXPECT_THROW(kernels::scatter_pooled_grads(nullptr, -1, 10, nullptr, 64, 16, nullptr), InternalError);
}

// The production shape (batch 65536, 26 slots of 128): one whole piece per slot, and
// every slot as 2 row_wise partial sums, checked on every element. The achieved
// bandwidth (every byte read or written once) is printed and recorded as a property;
// it is not asserted (it depends on the device).
TEST(PooledPieces, GatherAndScatterAtProductionSize) {
  HETREC_REQUIRE_GPU();
  const int num_slots = 26, dim = 128;
  const int64_t batch = 65536, x_stride = num_slots * dim + dim;  // the bottom MLP's output first
  const int64_t row = num_slots * dim;
  Rng rng(31);
  for (int per_slot : {1, 2}) {
    std::vector<std::vector<float>> host;
    std::vector<gpu::DeviceBuffer> sources;
    std::vector<kernels::PooledPiece> pieces;
    std::vector<int> slot_begin(1, 0);
    for (int t = 0; t < num_slots; ++t) {
      for (int k = 0; k < per_slot; ++k) {
        host.push_back(uniforms(static_cast<std::size_t>(batch * dim), rng));
        sources.push_back(testing::to_device(host.back()));
        kernels::PooledPiece p;
        p.src = sources.back().get();
        p.src_stride = dim;
        p.slot = t;
        p.width = dim;
        p.accumulate = k > 0;
        pieces.push_back(p);
      }
      slot_begin.push_back(static_cast<int>(pieces.size()));
    }
    gpu::DeviceBuffer x = testing::poisoned_floats(static_cast<std::size_t>(batch * x_stride));
    gpu::DeviceBuffer dpieces = testing::to_device(pieces), dslots = testing::to_device(slot_begin);
    // The legacy default stream: ordered with the synchronous copies of the inputs.
    const gpu::stream_t stream = nullptr;
    gpu::Event start, stop;
    constexpr int kRepeats = 20;
    kernels::gather_pooled_pieces(dpieces.as<kernels::PooledPiece>(), dslots.as<int>(), num_slots, batch,
                                  x.as<float>() + dim, x_stride, dim, stream);  // warm-up
    start.record(stream);
    for (int r = 0; r < kRepeats; ++r)
      kernels::gather_pooled_pieces(dpieces.as<kernels::PooledPiece>(), dslots.as<int>(), num_slots, batch,
                                    x.as<float>() + dim, x_stride, dim, stream);
    stop.record(stream);
    stop.synchronize();
    const double gather_ms = gpu::Event::elapsed_ms(start, stop) / kRepeats;
    const double gather_bytes = static_cast<double>(batch) * static_cast<double>(row) * sizeof(float) * (per_slot + 1);
    const std::vector<float> got = testing::to_host<float>(x, static_cast<std::size_t>(batch * x_stride));
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t col = 0; col < x_stride; ++col) {
        const float v = got[static_cast<std::size_t>(b * x_stride + col)];
        if (col < dim) {
          ASSERT_TRUE(std::isnan(v)) << "wrote into the bottom MLP's columns";
          continue;
        }
        const int64_t t = (col - dim) / dim, d = (col - dim) % dim;
        float ref = 0.0f;
        for (int k = 0; k < per_slot; ++k) {
          const float s = host[static_cast<std::size_t>(t * per_slot + k)][static_cast<std::size_t>(b * dim + d)];
          ref = k == 0 ? s : ref + s;
        }
        ASSERT_TRUE(same_bits(v, ref)) << "sample " << b << " column " << col;
      }

    // Scatter: every slot's gradient to per_slot destinations.
    std::vector<gpu::DeviceBuffer> dsts;
    std::vector<kernels::PooledGradPiece> grads;
    for (const kernels::PooledPiece& p : pieces) {
      dsts.push_back(testing::poisoned_floats(static_cast<std::size_t>(batch * dim)));
      grads.push_back({dsts.back().as<float>(), dim, p.slot, 0, dim});
    }
    gpu::DeviceBuffer dgrads = testing::to_device(grads);
    const int n = static_cast<int>(grads.size());
    kernels::scatter_pooled_grads(dgrads.as<kernels::PooledGradPiece>(), n, batch, x.as<float>() + dim, x_stride, dim,
                                  stream);
    start.record(stream);
    for (int r = 0; r < kRepeats; ++r)
      kernels::scatter_pooled_grads(dgrads.as<kernels::PooledGradPiece>(), n, batch, x.as<float>() + dim, x_stride,
                                    dim, stream);
    stop.record(stream);
    stop.synchronize();
    const double scatter_ms = gpu::Event::elapsed_ms(start, stop) / kRepeats;
    const double scatter_bytes = static_cast<double>(batch) * static_cast<double>(row) * sizeof(float) * 2 * per_slot;
    for (int k = 0; k < n; ++k) {
      const std::vector<float> d = testing::to_host<float>(dsts[static_cast<std::size_t>(k)], static_cast<std::size_t>(batch * dim));
      const int t = grads[static_cast<std::size_t>(k)].slot;
      for (int64_t b = 0; b < batch; ++b)
        for (int e = 0; e < dim; ++e)
          ASSERT_TRUE(same_bits(d[static_cast<std::size_t>(b * dim + e)],
                                got[static_cast<std::size_t>(b * x_stride + dim + t * dim + e)]))
              << "piece " << k << " sample " << b;
    }
    const std::string tag = std::to_string(per_slot) + "_per_slot";
    std::printf("gather (%d piece(s) per slot): %.3f ms, %.0f GB/s; scatter: %.3f ms, %.0f GB/s\n", per_slot,
                gather_ms, gather_bytes / gather_ms * 1e-6, scatter_ms, scatter_bytes / scatter_ms * 1e-6);
    ::testing::Test::RecordProperty("gather_ms_" + tag, std::to_string(gather_ms));
    ::testing::Test::RecordProperty("scatter_ms_" + tag, std::to_string(scatter_ms));
  }
}

}  // namespace
}  // namespace hetrec
