#pragma once
// Checkpoints of a distributed job. One directory per checkpoint,
//   <checkpoint_dir>/ckpt-<step>.d/rank-<r>.hck   one per rank, the checkpoint file format
//                                                 of train/checkpoint.h (CRC-32C, atomic)
//   <checkpoint_dir>/ckpt-<step>.d/manifest.json  written last, by rank 0
// Rank 0's file holds the replicated state (dense parameters, optimizer slots, "step");
// every rank's file holds the embedding blocks it is the primary holder of, each named
// "<tensor>@<row_begin>,<col_begin>" (its shape gives the extent). The ranks write into
// "ckpt-<step>.d.partial/"; after every rank has written, rank 0 writes the manifest
// (file names and sizes, step, data position, model signature, world size and sharding;
// its own CRC-32C on the last line), then renames the directory into place, so a
// checkpoint directory without ".partial" is complete. The checkpoint directory must be
// one file system every rank sees (a shared file system across hosts).
//
// Loading reshards: a checkpoint written with N ranks, or by a single process
// (ckpt-<step>.hck), loads into a model of any world size M; each rank copies the parts
// of every stored block that intersect its own blocks and checks that every element of
// its blocks was found.
#include <string>
#include <vector>

#include "core/log.h"
#include "model/dlrm.h"
#include "train/checkpoint.h"

namespace hetrec::inline train {

std::string sharded_checkpoint_path(const std::string& dir, int64_t step);

// Collective (every rank calls it). Throws IoError on a write failure; a checkpoint
// written before stays intact.
void save_sharded_checkpoint(const std::string& path, const CheckpointMeta& meta, DistributedModel& model);

// Checks the manifest (CRC, fields) and every rank file it lists (structure and CRC);
// a path ending in ".hck" is a single-process checkpoint and is verified as one.
// Throws CheckpointError naming the file and what is wrong, IoError naming the file and
// the OS error when one cannot be read.
CheckpointMeta verify_sharded_checkpoint(const std::string& path);

// Copies the checkpoint at `path` (sharded directory or single-process file) into this
// rank's part of `model`, whatever the world size it was written with. Verifies first.
CheckpointMeta load_sharded_checkpoint(const std::string& path, DistributedModel& model);

// Sharded checkpoint directories and single-process files of `dir`, newest step first.
std::vector<std::string> list_distributed_checkpoints(const std::string& dir);

// Rank 0, holding the directory's lock (train/checkpoint_dir_lock.h), so that no live run
// writes there: removes "*.d.partial" directories (writes interrupted by a failure) and
// all but the newest `keep` checkpoints.
void remove_partial_checkpoints(const std::string& dir, const Logger& log);
void prune_distributed_checkpoints(const std::string& dir, int64_t keep, const Logger& log);

}  // namespace hetrec::train::train
