#include "data/batch_fingerprint.h"

#include <vector>

#include "core/checksum.h"

namespace hetrec::inline data {
namespace {

// Values sampled from each array.
constexpr std::size_t kSamplesPerArray = 64;

// The CRC-32C of up to kSamplesPerArray evenly spaced elements and the last one (the end
// of the ids and of the offsets), extending `crc`.
template <class T>
uint32_t extend(uint32_t crc, const std::vector<T>& v) {
  if (v.empty()) return crc;
  const std::size_t step = v.size() > kSamplesPerArray ? v.size() / kSamplesPerArray : 1;
  for (std::size_t i = 0; i < v.size(); i += step) crc = crc32c(&v[i], sizeof(T), crc);
  return crc32c(&v.back(), sizeof(T), crc);
}

}  // namespace

BatchFingerprint batch_fingerprint(const Batch& batch) {
  BatchFingerprint f;
  f.size = batch.size;
  f.first_sample = batch.first_sample;
  f.ids = static_cast<int64_t>(batch.ids.size());
  f.dense = static_cast<int64_t>(batch.dense.size());
  f.num_tables = batch.num_tables;
  f.hash = extend(extend(extend(extend(0, batch.dense), batch.labels), batch.offsets), batch.ids);
  return f;
}

}  // namespace hetrec::data::data
