#pragma once
// Checkpoints: every tensor of the model's state plus the trainer's position, written
// atomically (temporary file, fsync, rename, fsync of the directory) and sealed with a
// CRC-32C, so a crash or a full disk during a write never damages the previous one.
//
// File layout (little-endian):
//   "HETRECCK" | u32 version | u32 meta_len | meta (JSON text) | u32 tensor_count |
//   tensor_count x { u32 name_len | name | u8 dtype | u8 rank | i64 dims[rank] |
//                    u64 nbytes | data } |
//   u32 crc32c(all bytes before it) | "HCKEND\0\0"
#include <cstdint>
#include <string>
#include <vector>

#include "model/model.h"

namespace hetrec::inline train {

struct CheckpointMeta {
  int64_t step = 0;            // optimizer steps taken
  int64_t epoch = 0;           // completed passes over the training data
  int64_t data_position = 0;   // samples consumed in the current epoch
  std::string model_signature; // architecture and shapes; must match on load
};

// Writes `path` atomically through the temporary "<path>.tmp-<pid>" (core/exclusive_file.h:
// created exclusively, never through a symbolic link). Throws IoError (naming the file and
// the OS error) when the write fails, or when a file or link exists at the temporary's
// name; then `path` is untouched and no temporary of this process is left.
void save_checkpoint(const std::string& path, const CheckpointMeta& meta, const std::vector<NamedTensor>& state);

// Reads the metadata and checks the whole file (magic, version, structure, CRC) without
// touching any model. Throws CheckpointError naming the file and what is wrong when it
// reads but fails a check, and IoError naming the file and the OS error when it cannot be
// read (permission denied, a directory, an I/O error): that file is not known to be damaged.
CheckpointMeta verify_checkpoint(const std::string& path);

// Verifies, then copies every tensor into `state` (names, dtypes and shapes must match).
CheckpointMeta load_checkpoint(const std::string& path, const std::vector<NamedTensor>& state);

// Verifies, then reads every tensor of `path` into new host tensors (file order).
std::vector<NamedTensor> read_checkpoint_tensors(const std::string& path, CheckpointMeta* meta = nullptr);

// A text that identifies the model's structure, stored in checkpoints.
std::string model_signature(const ModelConfig& model);

// Checkpoints of a directory: "ckpt-<step>.hck", newest first.
std::vector<std::string> list_checkpoints(const std::string& dir);
std::string checkpoint_path(const std::string& dir, int64_t step);

}  // namespace hetrec::train::train
