// Fuzz target: checkpoint files (train/checkpoint.h).
#include <array>
#include <string>

#include "core/checksum.h"
#include "harness/byte_fields.h"
#include "harness/checkpoint_models.h"
#include "harness/fuzz_support.h"
#include "harness/fuzz_targets.h"
#include "train/checkpoint.h"

namespace hetrec::fuzz {
namespace {

// The sealed trailer (train/checkpoint.h): u32 CRC-32C of every byte before it, then
// the 8-byte end marker.
constexpr char kEndMarker[8] = {'H', 'C', 'K', 'E', 'N', 'D', '\0', '\0'};
constexpr std::size_t kTrailerBytes = 4 + sizeof(kEndMarker);

// Mode byte: bit 0 reseals the file (CRC and end marker) so that mutations reach the
// structural checks; bit 1 picks the model.
void reseal(std::string& f) {
  if (f.size() < kTrailerBytes) return;
  const std::size_t body = f.size() - kTrailerBytes;
  set_field_at<uint32_t>(f, body, crc32c(f.data(), body));
  f.replace(body + 4, sizeof(kEndMarker), kEndMarker, sizeof(kEndMarker));
}

// The models are built once per process: building them is what a fuzz iteration would
// otherwise spend its time on, and loading only needs their tensors' names and shapes.
Model& model(std::size_t which) {
  static const std::array<std::unique_ptr<Model>, std::size(kCheckpointModelConfigs)> models = [] {
    std::array<std::unique_ptr<Model>, std::size(kCheckpointModelConfigs)> m;
    for (std::size_t i = 0; i < m.size(); ++i) m[i] = make_checkpoint_model(i);
    return m;
  }();
  return *models[which];
}

}  // namespace

void checkpoint(std::span<const uint8_t> data) {
  FuzzInput in(data);
  const uint8_t mode = in.byte();
  std::string bytes(in.rest());
  if (mode & 1) reseal(bytes);
  const MemoryFile file(bytes);
  CheckpointMeta verified;
  if (!accepted([&] { verified = verify_checkpoint(file.path()); })) return;
  Model& m = model((mode >> 1) & 1);
  CheckpointMeta loaded;
  if (!accepted([&] { loaded = load_checkpoint(file.path(), m.state()); })) return;
  if (loaded.step != verified.step || loaded.epoch != verified.epoch ||
      loaded.data_position != verified.data_position || loaded.model_signature != verified.model_signature)
    finding("load_checkpoint read other metadata than verify_checkpoint");
}

}  // namespace hetrec::fuzz
