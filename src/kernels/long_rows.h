#pragma once
// How the embedding backward splits a row that occurs many times in a batch into chunks
// summed in parallel (kernels/embedding_bag_backward.cu), for the device and for host
// code that predicts the update's work (tunable/sparse_update/sparse_update_cost.h).
// Pure constexpr functions: the device build calls them through
// --expt-relaxed-constexpr, as core/seed_streams.h.
#include <cstdint>

namespace hetrec::kernels {

// Occurrences one group sums for one row before the row is split into chunks summed in
// parallel: in a skewed batch a hot row occurs 10^4 to 10^6 times, which one group would
// sum for milliseconds while the rest of the device idles.
inline constexpr uint32_t kLongSegment = 64;

// The chunk length of a row occurring len > kLongSegment times: ceil(sqrt(len)), at least
// kLongSegment. A row then has about sqrt(len) chunks of about sqrt(len) occurrences, so
// neither one chunk's sum nor the sum of a row's chunk partials is a long serial chain
// (a row met 650 000 times: 807 chunks of 807, not 10 157 partials of 64 added by one
// group). Integer arithmetic only (a bisection over [0, 2^16], whose square covers
// every 32-bit count), so the chunks are the same on every launch and on the host.
constexpr uint32_t long_row_chunk_length(uint32_t len) {
  uint32_t lo = 0, hi = uint32_t{1} << 16;
  while (lo < hi) {
    const uint32_t mid = (lo + hi) / 2;
    if (static_cast<uint64_t>(mid) * mid >= len) hi = mid;
    else lo = mid + 1;
  }
  return lo > kLongSegment ? lo : kLongSegment;
}

// Chunks of a row occurring `len` times (0: a short row, summed whole by the update).
constexpr uint32_t long_row_chunks(uint32_t len) {
  if (len <= kLongSegment) return 0;
  const uint32_t l = long_row_chunk_length(len);
  return (len + l - 1) / l;
}

}  // namespace hetrec::kernels
