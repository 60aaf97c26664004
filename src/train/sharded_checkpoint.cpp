#include "train/sharded_checkpoint.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/checksum.h"
#include "core/error.h"
#include "core/exclusive_file.h"

namespace hetrec::inline train {
namespace fs = std::filesystem;
namespace {

constexpr const char* kManifest = "manifest.json";
constexpr const char* kFormat = "hetrec sharded checkpoint";
constexpr int kManifestVersion = 1;
constexpr const char* kCrcPrefix = "crc32c ";

std::string rank_file(int rank) { return "rank-" + std::to_string(rank) + ".hck"; }

// Writes `text` to `path` atomically through an exclusively created temporary.
void write_atomically(const std::string& path, const std::string& text) {
  try {
    write_file_atomically(path, text);
  } catch (const IoError& e) {
    throw IoError(std::string("checkpoint manifest: ") + e.what());
  }
}

std::string block_name(const ShardTensor& s) {
  return s.tensor.name + "@" + std::to_string(s.row_begin) + "," + std::to_string(s.col_begin);
}

// "<name>@<row>,<col>" -> (name, row, col); a plain name is a whole tensor at (0, 0).
struct BlockName {
  std::string name;
  int64_t row_begin = 0;
  int64_t col_begin = 0;
};
BlockName parse_block_name(const std::string& stored, const std::string& file) {
  const auto at = stored.find('@');
  if (at == std::string::npos) return {stored, 0, 0};
  BlockName b{stored.substr(0, at), 0, 0};
  const auto comma = stored.find(',', at);
  try {
    if (comma == std::string::npos) throw std::invalid_argument("no comma");
    b.row_begin = std::stoll(stored.substr(at + 1, comma - at - 1));
    b.col_begin = std::stoll(stored.substr(comma + 1));
  } catch (const std::exception&) {
    throw CheckpointError("checkpoint '" + file + "': tensor name '" + stored +
                          "' is not <name>@<row_begin>,<col_begin>");
  }
  return b;
}

struct Manifest {
  CheckpointMeta meta;
  int world_size = 0;
  std::vector<std::string> files;
};

Manifest read_manifest(const std::string& dir) {
  const std::string path = (fs::path(dir) / kManifest).string();
  // A missing manifest is an incomplete checkpoint; one that exists but cannot be read
  // (permission, a directory, an I/O error) is an IoError: it is not known to be damaged.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0 && errno == ENOENT)
    throw CheckpointError("checkpoint '" + dir + "': no " + kManifest +
                          " (the write did not complete on every rank)");
  if (fd < 0) throw IoError("checkpoint manifest '" + path + "': cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    const bool dir_entry = S_ISDIR(st.st_mode);
    ::close(fd);
    throw IoError("checkpoint manifest '" + path + "': cannot read: " +
                  (dir_entry ? std::strerror(EISDIR) : std::string("not a regular file")));
  }
  std::string text;
  char chunk[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const std::string err = std::strerror(errno);
      ::close(fd);
      throw IoError("checkpoint manifest '" + path + "': read error: " + err);
    }
    if (n == 0) break;
    text.append(chunk, static_cast<std::size_t>(n));
  }
  ::close(fd);
  const auto crc_at = text.rfind(kCrcPrefix);
  if (crc_at == std::string::npos || crc_at == 0 || text[crc_at - 1] != '\n')
    throw CheckpointError("checkpoint manifest '" + path + "': the last line must be '" + kCrcPrefix + "<hex>'");
  const std::string body = text.substr(0, crc_at);
  uint32_t stored = 0;
  try {
    stored = static_cast<uint32_t>(std::stoul(text.substr(crc_at + std::strlen(kCrcPrefix)), nullptr, 16));
  } catch (const std::exception&) {
    throw CheckpointError("checkpoint manifest '" + path + "': unreadable checksum line");
  }
  if (crc32c(body.data(), body.size(), 0) != stored)
    throw CheckpointError("checkpoint manifest '" + path + "': checksum mismatch (file is corrupted)");
  Manifest m;
  try {
    const auto j = nlohmann::json::parse(body);
    if (j.at("format").get<std::string>() != kFormat || j.at("version").get<int>() != kManifestVersion)
      throw CheckpointError("checkpoint manifest '" + path + "': not a version " + std::to_string(kManifestVersion) +
                            " hetrec sharded checkpoint");
    m.meta.step = j.at("step").get<int64_t>();
    m.meta.epoch = j.at("epoch").get<int64_t>();
    m.meta.data_position = j.at("data_position").get<int64_t>();
    m.meta.model_signature = j.at("model_signature").get<std::string>();
    m.world_size = j.at("world_size").get<int>();
    for (const auto& f : j.at("files")) m.files.push_back(f.at("name").get<std::string>());
  } catch (const nlohmann::json::exception& e) {
    throw CheckpointError("checkpoint manifest '" + path + "': " + e.what());
  }
  if (m.world_size < 1 || static_cast<int>(m.files.size()) != m.world_size)
    throw CheckpointError("checkpoint manifest '" + path + "': " + std::to_string(m.files.size()) +
                          " files for a world size of " + std::to_string(m.world_size));
  return m;
}

bool is_single_file(const std::string& path) { return path.size() > 4 && path.substr(path.size() - 4) == ".hck"; }

}  // namespace

std::string sharded_checkpoint_path(const std::string& dir, int64_t step) {
  char name[64];
  std::snprintf(name, sizeof name, "ckpt-%012lld.d", static_cast<long long>(step));
  return (fs::path(dir) / name).string();
}

void save_sharded_checkpoint(const std::string& path, const CheckpointMeta& meta, DistributedModel& model) {
  dist::ProcessGroup& group = model.group();
  const std::string partial = path + ".partial";
  if (group.rank() == 0) {
    std::error_code ec;
    fs::remove_all(partial, ec);  // a link planted at the name is removed, never followed
    // mkdir(2), not create_directories: a directory or link that appears at the name in
    // between is an error, never a place to write into.
    if (::mkdir(partial.c_str(), 0755) != 0)
      throw IoError("checkpoint '" + partial + "': cannot create the directory: " + std::strerror(errno));
  }
  group.barrier("barrier(checkpoint directory created)");
  std::vector<NamedTensor> mine;
  if (group.rank() == 0) mine = model.state();
  for (ShardTensor& s : model.embedding_shards())
    if (s.primary) mine.push_back({block_name(s), s.tensor.tensor});
  save_checkpoint((fs::path(partial) / rank_file(group.rank())).string(), meta, mine);
  group.barrier("barrier(checkpoint shards written)");
  if (group.rank() == 0) {
    nlohmann::json files = nlohmann::json::array();
    for (int r = 0; r < group.size(); ++r) {
      std::error_code ec;
      const auto bytes = fs::file_size(fs::path(partial) / rank_file(r), ec);
      if (ec) throw IoError("checkpoint '" + partial + "': rank " + std::to_string(r) + "'s file is missing: " + ec.message());
      files.push_back({{"name", rank_file(r)}, {"bytes", bytes}});
    }
    const std::string body = nlohmann::json{{"format", kFormat},
                                            {"version", kManifestVersion},
                                            {"step", meta.step},
                                            {"epoch", meta.epoch},
                                            {"data_position", meta.data_position},
                                            {"model_signature", meta.model_signature},
                                            {"world_size", group.size()},
                                            {"files", files}}
                                 .dump(1) +
                             "\n";
    char crc[16];
    std::snprintf(crc, sizeof crc, "%08x", crc32c(body.data(), body.size(), 0));
    write_atomically((fs::path(partial) / kManifest).string(), body + kCrcPrefix + crc + "\n");
    std::error_code ec;
    fs::remove_all(path, ec);  // a checkpoint of the same step (a resumed run saving again)
    fs::rename(partial, path, ec);
    if (ec) throw IoError("checkpoint '" + path + "': rename from '" + partial + "' failed: " + ec.message());
    fsync_directory(fs::path(path).parent_path().string());
  }
  group.barrier("barrier(checkpoint complete)");
}

CheckpointMeta verify_sharded_checkpoint(const std::string& path) {
  if (is_single_file(path)) return verify_checkpoint(path);
  const Manifest m = read_manifest(path);
  for (const std::string& f : m.files) {
    const CheckpointMeta meta = verify_checkpoint((fs::path(path) / f).string());
    if (meta.step != m.meta.step || meta.model_signature != m.meta.model_signature)
      throw CheckpointError("checkpoint '" + path + "': file " + f + " is from step " + std::to_string(meta.step) +
                            ", the manifest says step " + std::to_string(m.meta.step));
  }
  return m.meta;
}

CheckpointMeta load_sharded_checkpoint(const std::string& path, DistributedModel& model) {
  const CheckpointMeta meta = verify_sharded_checkpoint(path);
  std::vector<std::string> files;
  if (is_single_file(path)) files.push_back(path);
  else
    for (const std::string& f : read_manifest(path).files) files.push_back((fs::path(path) / f).string());

  const std::vector<NamedTensor> replicated = model.state();
  std::vector<bool> found(replicated.size(), false);
  const std::vector<ShardTensor> blocks = model.embedding_shards();
  std::vector<int64_t> covered(blocks.size(), 0);
  for (const std::string& file : files) {
    for (const NamedTensor& stored : read_checkpoint_tensors(file)) {
      const BlockName b = parse_block_name(stored.name, file);
      const bool whole = stored.name.find('@') == std::string::npos;
      for (std::size_t i = 0; whole && i < replicated.size(); ++i) {
        if (replicated[i].name != stored.name) continue;
        const Tensor& dst = replicated[i].tensor;
        if (dst.dtype() != stored.tensor.dtype() || dst.shape() != stored.tensor.shape())
          throw CheckpointError("checkpoint '" + file + "': tensor '" + stored.name + "' is " +
                                std::string(dtype_name(stored.tensor.dtype())) + " " + stored.tensor.shape_str() +
                                ", the model expects " + std::string(dtype_name(dst.dtype())) + " " + dst.shape_str());
        std::memcpy(dst.raw(), stored.tensor.raw(), dst.nbytes());
        found[i] = true;
      }
      for (std::size_t i = 0; i < blocks.size(); ++i) {
        const ShardTensor& dst = blocks[i];
        if (dst.tensor.name != b.name) continue;
        const Tensor& d = dst.tensor.tensor;
        const Tensor& s = stored.tensor;
        if (d.dtype() != s.dtype() || d.rank() != s.rank())
          throw CheckpointError("checkpoint '" + file + "': tensor '" + stored.name + "' is " +
                                std::string(dtype_name(s.dtype())) + " " + s.shape_str() + ", the model's block is " +
                                std::string(dtype_name(d.dtype())) + " " + d.shape_str());
        const int64_t d_cols = d.rank() == 2 ? d.dim(1) : 1, s_cols = s.rank() == 2 ? s.dim(1) : 1;
        const int64_t r0 = std::max(dst.row_begin, b.row_begin);
        const int64_t r1 = std::min(dst.row_begin + d.dim(0), b.row_begin + s.dim(0));
        const int64_t c0 = std::max<int64_t>(dst.col_begin, b.col_begin);
        const int64_t c1 = std::min<int64_t>(dst.col_begin + d_cols, b.col_begin + s_cols);
        if (r0 >= r1 || c0 >= c1) continue;
        const std::size_t elem = dtype_size(d.dtype());
        auto* dbase = static_cast<uint8_t*>(d.raw());
        const auto* sbase = static_cast<const uint8_t*>(s.raw());
        for (int64_t r = r0; r < r1; ++r)
          std::memcpy(dbase + static_cast<std::size_t>((r - dst.row_begin) * d_cols + (c0 - dst.col_begin)) * elem,
                      sbase + static_cast<std::size_t>((r - b.row_begin) * s_cols + (c0 - b.col_begin)) * elem,
                      static_cast<std::size_t>(c1 - c0) * elem);
        covered[i] += (r1 - r0) * (c1 - c0);
      }
    }
  }
  for (std::size_t i = 0; i < replicated.size(); ++i)
    if (!found[i])
      throw CheckpointError("checkpoint '" + path + "' has no tensor '" + replicated[i].name + "'");
  for (std::size_t i = 0; i < blocks.size(); ++i)
    if (covered[i] != blocks[i].tensor.tensor.numel())
      throw CheckpointError("checkpoint '" + path + "' covers " + std::to_string(covered[i]) + " of the " +
                            std::to_string(blocks[i].tensor.tensor.numel()) + " elements of '" + blocks[i].tensor.name +
                            "' rows from " + std::to_string(blocks[i].row_begin) + ", columns from " +
                            std::to_string(blocks[i].col_begin));
  return meta;
}

std::vector<std::string> list_distributed_checkpoints(const std::string& dir) {
  std::vector<std::pair<std::string, std::string>> keyed;  // (step digits, path)
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string n = e.path().filename().string();
    if (n.rfind("ckpt-", 0) != 0 || n.size() < 17) continue;
    const std::string rest = n.substr(17);
    if ((rest == ".d" && e.is_directory()) || rest == ".hck") keyed.emplace_back(n.substr(5, 12) + rest, e.path().string());
  }
  std::sort(keyed.rbegin(), keyed.rend());
  std::vector<std::string> out;
  for (auto& k : keyed) out.push_back(std::move(k.second));
  return out;
}

void remove_partial_checkpoints(const std::string& dir, const Logger& log) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string n = e.path().filename().string();
    if (n.rfind("ckpt-", 0) == 0 && n.size() > 8 && n.substr(n.size() - 8) == ".partial") {
      std::error_code rm;
      fs::remove_all(e.path(), rm);
      log.info("removed an unfinished checkpoint write: " + e.path().string());
    }
  }
}

void prune_distributed_checkpoints(const std::string& dir, int64_t keep, const Logger& log) {
  const auto all = list_distributed_checkpoints(dir);
  for (std::size_t i = static_cast<std::size_t>(keep); i < all.size(); ++i) {
    std::error_code ec;
    fs::remove_all(all[i], ec);
    if (ec) log.warn("could not remove old checkpoint " + all[i] + ": " + ec.message());
  }
}

}  // namespace hetrec::train::train
