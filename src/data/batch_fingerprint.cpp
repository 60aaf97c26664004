#include "data/batch_fingerprint.h"

#include <cstring>
#include <vector>

namespace hetrec {
namespace {

// Values sampled from each array.
constexpr std::size_t kSamplesPerArray = 64;

// FNV-1a over the bytes of up to kSamplesPerArray evenly spaced elements.
template <class T>
uint64_t mix(uint64_t h, const std::vector<T>& v) {
  if (v.empty()) return h;
  const std::size_t step = v.size() > kSamplesPerArray ? v.size() / kSamplesPerArray : 1;
  for (std::size_t i = 0; i < v.size(); i += step) {
    unsigned char bytes[sizeof(T)];
    std::memcpy(bytes, &v[i], sizeof(T));
    for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ull;
  }
  // The last element too (the end of the ids and of the offsets).
  unsigned char bytes[sizeof(T)];
  std::memcpy(bytes, &v.back(), sizeof(T));
  for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace

BatchFingerprint batch_fingerprint(const Batch& batch) {
  BatchFingerprint f;
  f.size = batch.size;
  f.first_sample = batch.first_sample;
  f.ids = static_cast<int64_t>(batch.ids.size());
  f.dense = static_cast<int64_t>(batch.dense.size());
  f.num_tables = batch.num_tables;
  uint64_t h = 14695981039346656037ull;
  h = mix(h, batch.dense);
  h = mix(h, batch.labels);
  h = mix(h, batch.offsets);
  h = mix(h, batch.ids);
  f.hash = h;
  return f;
}

}  // namespace hetrec
