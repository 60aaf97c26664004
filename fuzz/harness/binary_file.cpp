// Fuzz target: the binary columnar data format (data/binary_format.h).
#include <string>
#include <vector>

#include "core/checksum.h"
#include "data/binary_format.h"
#include "data/binary_source.h"
#include "data/binary_tools.h"
#include "harness/batch_checks.h"
#include "harness/byte_fields.h"
#include "harness/fuzz_support.h"
#include "harness/fuzz_targets.h"

namespace hetrec::fuzz {
namespace {

// Mode byte: bit 0 repairs every checksum the structure lets us find, so that mutations
// reach the checks behind them; bits 1-2 pick the batch size.
constexpr int64_t kBatchSizes[] = {1, 2, 7, 1000};

// Offsets inside the file, from docs/data_format.md: the table count in the fixed header,
// and the sample count, group count and index CRC counted back from the end.
constexpr std::size_t kTableCountAt = 16;
constexpr std::size_t kGroupCountFromEnd = 24;
constexpr std::size_t kIndexCrcFromEnd = 16;
constexpr uint32_t kMaxTablesToRepair = 1u << 16;

void store_crc(std::string& f, std::size_t begin, std::size_t end) {
  set_field_at<uint32_t>(f, end, crc32c(f.data() + begin, end - begin));
}

void repair_checksums(std::string& f) {
  const std::size_t size = f.size();
  if (size < kHeaderFixedBytes) return;
  const uint32_t tables = field_at<uint32_t>(f, kTableCountAt);
  if (tables > kMaxTablesToRepair) return;
  const std::size_t header = kHeaderFixedBytes + 8 * std::size_t{tables} + 4;
  if (size < header) return;
  store_crc(f, 0, header - 4);
  if (size < header + kTrailerTailBytes) return;
  const uint64_t groups = field_at<uint64_t>(f, size - kGroupCountFromEnd);
  if (groups > (size - header - kTrailerTailBytes) / 8) return;
  const std::size_t index = size - kTrailerTailBytes - 8 * static_cast<std::size_t>(groups);
  for (std::size_t g = 0; g < groups; ++g) {
    const uint64_t begin = field_at<uint64_t>(f, index + 8 * g);
    const uint64_t end = g + 1 < groups ? field_at<uint64_t>(f, index + 8 * (g + 1)) : index;
    if (begin < header || end > index || begin > end || end - begin < kGroupHeaderBytes + 4) continue;
    store_crc(f, static_cast<std::size_t>(begin), static_cast<std::size_t>(end) - 4);
  }
  store_crc(f, index, size - kIndexCrcFromEnd);
}

void read_every_group(const std::string& path) {
  BinaryFile file(path, "fuzz");
  RowGroup group;
  for (int64_t g = 0; g < file.groups(); ++g) {
    if (!accepted([&] { file.read_group(g, group); })) continue;
    if (group.index != g || group.size < 1 || group.size > file.header().group_samples)
      finding("row group " + std::to_string(g) + " decoded with index " + std::to_string(group.index) + " and " +
              std::to_string(group.size) + " samples");
  }
}

void stream(const std::string& path, int64_t batch_size) {
  BinarySource source(path, "fuzz");
  const BinaryHeader& h = source.header();
  Batch batch;
  int64_t delivered = 0;
  while (source.next(batch, batch_size)) {
    check_batch(batch, h.num_dense, h.rows, batch_size, delivered);
    delivered += batch.size;
  }
  if (delivered != source.size_hint())
    finding(std::to_string(delivered) + " samples delivered of the " + std::to_string(source.size_hint()) +
            " the trailer announces");
  source.seek(delivered / 2);
  if (delivered > 0 && (!source.next(batch, 1) || batch.first_sample != delivered / 2))
    finding("seek to a sample then next() did not deliver it");
}

}  // namespace

void binary_file(std::span<const uint8_t> data) {
  FuzzInput in(data);
  const uint8_t mode = in.byte();
  std::string bytes(in.rest());
  if (mode & 1) repair_checksums(bytes);
  const MemoryFile file(bytes);
  accepted([&] { read_every_group(file.path()); });
  accepted([&] { inspect_binary(file.path()); });
  accepted([&] { stream(file.path(), kBatchSizes[(mode >> 1) & 3]); });
}

}  // namespace hetrec::fuzz
