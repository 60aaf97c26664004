#include "train/checkpoint.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/checksum.h"
#include "core/error.h"
#include "core/exclusive_file.h"

namespace hetrec::inline train {
namespace {

constexpr char kMagic[8] = {'H', 'E', 'T', 'R', 'E', 'C', 'C', 'K'};
constexpr char kEndMagic[8] = {'H', 'C', 'K', 'E', 'N', 'D', '\0', '\0'};
constexpr uint32_t kVersion = 1;
constexpr std::size_t kIoChunk = 8u << 20;  // bytes per write()/read() call

std::string os_error() { return std::strerror(errno); }

// Appends to a file descriptor while accumulating the CRC.
class CheckedWriter {
 public:
  CheckedWriter(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  void write(const void* data, std::size_t n) {
    crc_ = crc32c(data, n, crc_);
    raw(data, n);
  }
  template <class T>
  void put(T v) {
    write(&v, sizeof v);
  }
  void raw(const void* data, std::size_t n) {
    const char* p = static_cast<const char*>(data);
    while (n > 0) {
      const ssize_t w = ::write(fd_, p, std::min(n, kIoChunk));
      if (w < 0) {
        if (errno == EINTR) continue;
        throw IoError("writing checkpoint '" + path_ + "': " + os_error());
      }
      p += w;
      n -= static_cast<std::size_t>(w);
    }
  }
  uint32_t crc() const { return crc_; }

 private:
  int fd_;
  std::string path_;
  uint32_t crc_ = 0;
};

// Reads a checkpoint sequentially, accumulating the CRC, with bounds checks that turn a
// truncated or foreign file into a CheckpointError. A file that cannot be read at all (no
// permission, a directory, an I/O error) is an IoError: it is not known to be damaged.
class CheckedReader {
 public:
  explicit CheckedReader(const std::string& path) : path_(path) {
    // O_NONBLOCK: a FIFO planted at the name must not hang the open (no effect on files).
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) throw IoError("checkpoint '" + path + "': cannot open: " + os_error());
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      const std::string err = os_error();
      ::close(fd);
      throw IoError("checkpoint '" + path + "': cannot stat: " + err);
    }
    if (!S_ISREG(st.st_mode)) {
      ::close(fd);
      throw IoError("checkpoint '" + path + "': cannot read: " +
                    (S_ISDIR(st.st_mode) ? std::strerror(EISDIR) : std::string("not a regular file")));
    }
    f_ = ::fdopen(fd, "rb");
    if (!f_) {
      const std::string err = os_error();
      ::close(fd);
      throw IoError("checkpoint '" + path + "': cannot open: " + err);
    }
    size_ = static_cast<uint64_t>(st.st_size);
  }
  ~CheckedReader() { std::fclose(f_); }
  CheckedReader(const CheckedReader&) = delete;
  CheckedReader& operator=(const CheckedReader&) = delete;

  void read(void* out, std::size_t n, const char* what) {
    if (pos_ + n > size_) fail(std::string("truncated while reading ") + what);
    errno = 0;
    if (std::fread(out, 1, n, f_) != n) {
      if (std::ferror(f_))
        throw IoError("checkpoint '" + path_ + "': read error at byte " + std::to_string(pos_) + " in " + what + ": " +
                      (errno != 0 ? os_error() : std::string("unknown error")));
      fail(std::string("truncated while reading ") + what + " (the file shrank while it was read)");
    }
    crc_ = crc32c(out, n, crc_);
    pos_ += n;
  }
  // Reads n bytes only to checksum them (verification pass).
  void skip(uint64_t n, const char* what) {
    std::vector<char> buf(static_cast<std::size_t>(std::min<uint64_t>(n, kIoChunk)));
    while (n > 0) {
      const std::size_t k = static_cast<std::size_t>(std::min<uint64_t>(n, buf.size()));
      read(buf.data(), k, what);
      n -= k;
    }
  }
  template <class T>
  T get(const char* what) {
    T v{};
    read(&v, sizeof v, what);
    return v;
  }
  uint64_t remaining() const { return size_ - pos_; }
  uint32_t crc() const { return crc_; }
  [[noreturn]] void fail(const std::string& msg) const {
    throw CheckpointError("checkpoint '" + path_ + "' at byte " + std::to_string(pos_) + ": " + msg);
  }

 private:
  std::string path_;
  std::FILE* f_ = nullptr;
  uint64_t size_ = 0;
  uint64_t pos_ = 0;
  uint32_t crc_ = 0;
};

struct TensorHeader {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  uint64_t nbytes;
};

CheckpointMeta read_header(CheckedReader& r, uint32_t& count) {
  char magic[8];
  r.read(magic, 8, "magic");
  if (std::memcmp(magic, kMagic, 8) != 0) r.fail("not a hetrec checkpoint (bad magic)");
  const uint32_t version = r.get<uint32_t>("version");
  if (version != kVersion)
    r.fail("format version " + std::to_string(version) + ", this build reads version " + std::to_string(kVersion));
  const uint32_t meta_len = r.get<uint32_t>("metadata length");
  if (meta_len > r.remaining()) r.fail("metadata length " + std::to_string(meta_len) + " exceeds the file");
  std::string text(meta_len, '\0');
  r.read(text.data(), meta_len, "metadata");
  CheckpointMeta meta;
  try {
    const auto j = nlohmann::json::parse(text);
    meta.step = j.at("step").get<int64_t>();
    meta.epoch = j.at("epoch").get<int64_t>();
    meta.data_position = j.at("data_position").get<int64_t>();
    meta.model_signature = j.at("model_signature").get<std::string>();
  } catch (const nlohmann::json::exception& e) {
    r.fail(std::string("metadata is not valid: ") + e.what());
  }
  count = r.get<uint32_t>("tensor count");
  return meta;
}

TensorHeader read_tensor_header(CheckedReader& r) {
  TensorHeader h;
  const uint32_t name_len = r.get<uint32_t>("tensor name length");
  if (name_len > 4096) r.fail("tensor name length " + std::to_string(name_len) + " is implausible");
  h.name.resize(name_len);
  r.read(h.name.data(), name_len, "tensor name");
  const uint8_t dt = r.get<uint8_t>("tensor dtype");
  if (dt > static_cast<uint8_t>(DType::u8)) r.fail("tensor '" + h.name + "': unknown dtype code " + std::to_string(dt));
  h.dtype = static_cast<DType>(dt);
  const uint8_t rank = r.get<uint8_t>("tensor rank");
  if (rank > 8) r.fail("tensor '" + h.name + "': rank " + std::to_string(rank) + " is implausible");
  uint64_t numel = 1;
  for (int i = 0; i < rank; ++i) {
    const int64_t d = r.get<int64_t>("tensor shape");
    if (d < 0) r.fail("tensor '" + h.name + "': negative dimension");
    h.shape.push_back(d);
    numel *= static_cast<uint64_t>(d);
  }
  h.nbytes = r.get<uint64_t>("tensor size");
  if (h.nbytes != numel * dtype_size(h.dtype)) r.fail("tensor '" + h.name + "': size does not match its shape");
  if (h.nbytes > r.remaining()) r.fail("tensor '" + h.name + "': truncated data");
  return h;
}

void check_trailer(CheckedReader& r) {
  const uint32_t expected = r.crc();
  uint32_t stored = 0;
  char end[8];
  if (r.remaining() != sizeof stored + sizeof end)
    r.fail("expected the 12-byte trailer, " + std::to_string(r.remaining()) + " bytes remain");
  r.read(&stored, sizeof stored, "checksum");
  r.read(end, 8, "end marker");
  if (std::memcmp(end, kEndMagic, 8) != 0) r.fail("bad end marker");
  if (stored != expected) r.fail("checksum mismatch (file is corrupted)");
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

}  // namespace

std::string model_signature(const ModelConfig& m) {
  std::string s = m.arch == Arch::dcnv2 ? "dcnv2" : "dlrm";
  s += " dense=" + std::to_string(m.num_dense) + " dim=" + std::to_string(m.embedding_dim) + " rows=";
  for (std::size_t t = 0; t < m.tables.size(); ++t) s += (t ? "," : "") + std::to_string(m.tables[t].rows);
  s += " bottom=";
  for (std::size_t i = 0; i < m.bottom_mlp.size(); ++i) s += (i ? "," : "") + std::to_string(m.bottom_mlp[i]);
  s += " top=";
  for (std::size_t i = 0; i < m.top_mlp.size(); ++i) s += (i ? "," : "") + std::to_string(m.top_mlp[i]);
  if (m.arch == Arch::dcnv2) s += " cross=" + std::to_string(m.cross_layers) + "x" + std::to_string(m.cross_rank);
  s += " rows_dtype=" + std::string(dtype_name(m.row_dtype));
  return s;
}

void save_checkpoint(const std::string& path, const CheckpointMeta& meta, const std::vector<NamedTensor>& state) {
  // The temporary "<path>.tmp-<pid>" is created exclusively and never through a link; the
  // ExclusiveFile removes it unless commit() has renamed it into place.
  std::optional<ExclusiveFile> file;
  try {
    file.emplace(path);
  } catch (const IoError& e) {
    throw IoError(std::string("writing checkpoint: ") + e.what());
  }
  CheckedWriter w(file->fd(), file->temporary());
  w.write(kMagic, 8);
  w.put<uint32_t>(kVersion);
  const std::string text = nlohmann::json{{"step", meta.step},
                                          {"epoch", meta.epoch},
                                          {"data_position", meta.data_position},
                                          {"model_signature", meta.model_signature}}
                               .dump();
  w.put<uint32_t>(static_cast<uint32_t>(text.size()));
  w.write(text.data(), text.size());
  w.put<uint32_t>(static_cast<uint32_t>(state.size()));
  for (const auto& nt : state) {
    const Tensor& t = nt.tensor;
    if (t.device().kind != DeviceKind::cpu || !t.is_contiguous())
      throw InternalError("checkpoint tensor '" + nt.name + "' must be a contiguous host tensor");
    w.put<uint32_t>(static_cast<uint32_t>(nt.name.size()));
    w.write(nt.name.data(), nt.name.size());
    w.put<uint8_t>(static_cast<uint8_t>(t.dtype()));
    w.put<uint8_t>(static_cast<uint8_t>(t.rank()));
    for (int64_t d : t.shape()) w.put<int64_t>(d);
    w.put<uint64_t>(t.nbytes());
    w.write(t.raw(), t.nbytes());
  }
  const uint32_t crc = w.crc();
  w.raw(&crc, sizeof crc);
  w.raw(kEndMagic, 8);
  try {
    file->commit();  // fsync, close, rename over `path`, fsync of the directory
  } catch (const IoError& e) {
    throw IoError(std::string("writing checkpoint: ") + e.what());
  }
}

CheckpointMeta verify_checkpoint(const std::string& path) {
  CheckedReader r(path);
  uint32_t count = 0;
  CheckpointMeta meta = read_header(r, count);
  for (uint32_t i = 0; i < count; ++i) {
    const TensorHeader h = read_tensor_header(r);
    r.skip(h.nbytes, "tensor data");
  }
  check_trailer(r);
  return meta;
}

CheckpointMeta load_checkpoint(const std::string& path, const std::vector<NamedTensor>& state) {
  verify_checkpoint(path);  // never write into the model from a damaged file
  CheckedReader r(path);
  uint32_t count = 0;
  CheckpointMeta meta = read_header(r, count);
  if (count != state.size())
    r.fail("holds " + std::to_string(count) + " tensors, the model has " + std::to_string(state.size()));
  for (uint32_t i = 0; i < count; ++i) {
    const TensorHeader h = read_tensor_header(r);
    const NamedTensor& dst = state[i];
    if (h.name != dst.name) r.fail("tensor " + std::to_string(i) + " is '" + h.name + "', the model expects '" + dst.name + "'");
    if (h.dtype != dst.tensor.dtype() || h.shape != dst.tensor.shape())
      r.fail("tensor '" + h.name + "' has dtype " + std::string(dtype_name(h.dtype)) + " shape " +
             shape_text(h.shape) + "; the model expects " + std::string(dtype_name(dst.tensor.dtype())) +
             " " + dst.tensor.shape_str());
    r.read(dst.tensor.raw(), h.nbytes, "tensor data");
  }
  check_trailer(r);
  return meta;
}

std::vector<NamedTensor> read_checkpoint_tensors(const std::string& path, CheckpointMeta* meta_out) {
  verify_checkpoint(path);
  CheckedReader r(path);
  uint32_t count = 0;
  const CheckpointMeta meta = read_header(r, count);
  std::vector<NamedTensor> out;
  for (uint32_t i = 0; i < count; ++i) {
    const TensorHeader h = read_tensor_header(r);
    Tensor t = Tensor::empty(h.shape, h.dtype);
    r.read(t.raw(), h.nbytes, "tensor data");
    out.push_back({h.name, std::move(t)});
  }
  check_trailer(r);
  if (meta_out) *meta_out = meta;
  return out;
}

std::string checkpoint_path(const std::string& dir, int64_t step) {
  char name[64];
  std::snprintf(name, sizeof name, "ckpt-%012lld.hck", static_cast<long long>(step));
  return (std::filesystem::path(dir) / name).string();
}

std::vector<std::string> list_checkpoints(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string n = e.path().filename().string();
    if (n.size() == 21 && n.rfind("ckpt-", 0) == 0 && n.substr(17) == ".hck") out.push_back(e.path().string());
  }
  std::sort(out.rbegin(), out.rend());  // zero-padded step: lexical order is step order
  return out;
}

}  // namespace hetrec::train::train
