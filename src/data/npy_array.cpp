#include "data/npy_array.h"

#include <zlib.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"

namespace hetrec::inline data {

class NpyArray::Impl {
 public:
  virtual ~Impl() = default;
  virtual bool deflated() const = 0;
  // Copies `bytes` bytes starting `offset` bytes into the .npy stream.
  virtual void read(int64_t offset, std::size_t bytes, char* out) = 0;

  // Reads and parses the header from the start of the stream of `stream_bytes` bytes,
  // then checks that the stream holds exactly header + data.
  void read_header(int64_t stream_bytes) {
    char pre[kNpyPreambleBytesV2];
    const auto first = static_cast<std::size_t>(std::min<int64_t>(stream_bytes, sizeof pre));
    read(0, first, pre);
    const int64_t total = npy_header_bytes(pre, first, name);
    if (total > stream_bytes)
      throw DataError(fmt::format("{}: truncated .npy header: {} bytes, the header says {}", name, stream_bytes, total));
    std::vector<char> text(static_cast<std::size_t>(total));
    read(0, text.size(), text.data());
    header = parse_npy_header(text.data(), text.size(), name);
    const int64_t data = stream_bytes - header.header_bytes;
    if (data != header.data_bytes())
      throw DataError(fmt::format("{}: {} bytes of data, the header's shape ({}) of '{}' needs {}{}", name, data,
                                  fmt::join(header.shape, ", "), header.descr, header.data_bytes(),
                                  data < header.data_bytes() ? " (truncated)" : ""));
    rows = header.shape.empty() ? 1 : header.shape[0];
    row_bytes = header.item_bytes;
    for (std::size_t i = 1; i < header.shape.size(); ++i) row_bytes *= header.shape[i];
  }

  std::string name;
  NpyHeader header;
  int64_t rows = 0, row_bytes = 0;
};

namespace {

// A .npy file or a stored member: positioned reads of the bytes where they lie.
class InPlace final : public NpyArray::Impl {
 public:
  InPlace(std::optional<ReadOnlyFile> owned, const ReadOnlyFile* file, int64_t base)
      : owned_(std::move(owned)), file_(owned_ ? &*owned_ : file), base_(base) {}
  bool deflated() const override { return false; }
  void read(int64_t offset, std::size_t bytes, char* out) override { file_->read_at(base_ + offset, out, bytes); }

 private:
  std::optional<ReadOnlyFile> owned_;
  const ReadOnlyFile* file_;
  int64_t base_;
};

// A deflated member: raw deflate (no zlib or gzip wrapper) inflated as a stream.
class Inflating final : public NpyArray::Impl {
 public:
  // Compressed bytes read from the archive per refill.
  static constexpr std::size_t kInputBytes = std::size_t{1} << 18;
  // Bytes inflated and dropped per call while skipping ahead.
  static constexpr std::size_t kSkipBytes = std::size_t{1} << 18;

  Inflating(const ReadOnlyFile& file, NpzMember member) : file_(file), member_(std::move(member)) {
    std::memset(&zs_, 0, sizeof zs_);
    if (inflateInit2(&zs_, -MAX_WBITS) != Z_OK) throw InternalError("zlib inflateInit2 failed");
  }
  ~Inflating() override { inflateEnd(&zs_); }
  bool deflated() const override { return true; }

  void read(int64_t offset, std::size_t bytes, char* out) override {
    if (offset < out_pos_) restart();
    while (out_pos_ < offset) {
      scratch_.resize(kSkipBytes);
      const auto n = static_cast<std::size_t>(std::min<int64_t>(offset - out_pos_, kSkipBytes));
      produce(scratch_.data(), n);
    }
    produce(out, bytes);
  }

 private:
  void restart() {
    if (inflateReset(&zs_) != Z_OK) throw InternalError("zlib inflateReset failed");
    zs_.avail_in = 0;
    in_pos_ = 0;
    out_pos_ = 0;
    crc_ = crc32(0L, Z_NULL, 0);
    ended_ = false;
  }

  [[noreturn]] void corrupt(const std::string& why) const {
    throw DataError(fmt::format("{}: corrupt deflated member: {}", name, why));
  }

  // One call of inflate into out[0 .. want), refilling the input first when it is
  // empty (once all input is in, inflate may still hold output); returns the bytes
  // produced and checks the stream's end when it is reached.
  std::size_t step(char* out, std::size_t want) {
    const int64_t left = member_.compressed_bytes - in_pos_;
    if (zs_.avail_in == 0 && left > 0) {
      input_.resize(kInputBytes);
      const auto n = static_cast<std::size_t>(std::min<int64_t>(left, static_cast<int64_t>(kInputBytes)));
      file_.read_at(member_.data_offset + in_pos_, input_.data(), n);
      in_pos_ += static_cast<int64_t>(n);
      zs_.next_in = input_.data();
      zs_.avail_in = static_cast<uInt>(n);
    }
    want = std::min<std::size_t>(want, UINT_MAX / 2);
    zs_.next_out = reinterpret_cast<Bytef*>(out);
    zs_.avail_out = static_cast<uInt>(want);
    const int rc = inflate(&zs_, Z_NO_FLUSH);
    const std::size_t got = want - zs_.avail_out;
    crc_ = crc32(crc_, reinterpret_cast<const Bytef*>(out), static_cast<uInt>(got));
    out_pos_ += static_cast<int64_t>(got);
    if (out_pos_ > member_.bytes)
      corrupt(fmt::format("the stream holds more than the {} bytes the archive's directory says", member_.bytes));
    if (rc == Z_STREAM_END) {
      ended_ = true;
      if (out_pos_ != member_.bytes)
        corrupt(fmt::format("the stream holds {} bytes, the archive's directory says {}", out_pos_, member_.bytes));
      if (crc_ != member_.crc32)
        corrupt(fmt::format("CRC-32 {:#010x} of the inflated bytes, the archive's directory says {:#010x}", crc_,
                            member_.crc32));
    } else if (rc == Z_BUF_ERROR && got == 0 && zs_.avail_in == 0 && in_pos_ == member_.compressed_bytes) {
      corrupt(fmt::format("its {} compressed bytes end mid-stream", member_.compressed_bytes));
    } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
      corrupt(zs_.msg != nullptr ? std::string(zs_.msg) : fmt::format("zlib error {}", rc));
    } else if (rc == Z_BUF_ERROR && got == 0) {
      corrupt("the stream makes no progress");
    }
    return got;
  }

  // Inflates exactly `bytes` further bytes into `out`. When that reaches the member's
  // last byte, the stream is also run to its end, so that its CRC-32 is checked.
  void produce(char* out, std::size_t bytes) {
    std::size_t done = 0;
    while (done < bytes) {
      if (ended_)
        corrupt(fmt::format("the stream ends after {} bytes, {} were needed", out_pos_,
                            out_pos_ + static_cast<int64_t>(bytes - done)));
      done += step(out + done, bytes - done);
    }
    char extra = 0;
    while (out_pos_ == member_.bytes && !ended_) step(&extra, 1);
  }

  const ReadOnlyFile& file_;
  NpzMember member_;
  z_stream zs_;
  std::vector<unsigned char> input_;
  std::vector<char> scratch_;
  int64_t in_pos_ = 0;   // compressed bytes consumed from the archive
  int64_t out_pos_ = 0;  // uncompressed bytes produced
  uLong crc_ = crc32(0L, Z_NULL, 0);
  bool ended_ = false;
};

}  // namespace

NpyArray::NpyArray(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
NpyArray::NpyArray(NpyArray&&) noexcept = default;
NpyArray& NpyArray::operator=(NpyArray&&) noexcept = default;
NpyArray::~NpyArray() = default;

NpyArray NpyArray::open_file(const std::string& path, const std::string& what) {
  ReadOnlyFile file(path, what);
  const int64_t size = file.size();
  auto impl = std::make_unique<InPlace>(std::move(file), nullptr, 0);
  impl->name = path;
  impl->read_header(size);
  return NpyArray(std::move(impl));
}

NpyArray NpyArray::open_member(const NpzArchive& archive, const NpzMember& member) {
  std::unique_ptr<Impl> impl;
  if (member.method == kZipDeflated)
    impl = std::make_unique<Inflating>(archive.file(), member);
  else
    impl = std::make_unique<InPlace>(std::nullopt, &archive.file(), member.data_offset);
  impl->name = fmt::format("{}, member '{}'", archive.path(), member.name);
  impl->read_header(member.bytes);
  return NpyArray(std::move(impl));
}

const std::string& NpyArray::name() const { return impl_->name; }
const NpyHeader& NpyArray::header() const { return impl_->header; }
bool NpyArray::deflated() const { return impl_->deflated(); }
int64_t NpyArray::rows() const { return impl_->rows; }
int64_t NpyArray::row_bytes() const { return impl_->row_bytes; }

void NpyArray::read_rows(int64_t first, int64_t count, void* out) {
  if (first < 0 || count < 0 || first > impl_->rows || count > impl_->rows - first)
    throw DataError(fmt::format("{}: rows {}..{} requested, the array has {}", impl_->name, first, first + count,
                                impl_->rows));
  impl_->read(impl_->header.header_bytes + first * impl_->row_bytes,
              static_cast<std::size_t>(count * impl_->row_bytes), static_cast<char*>(out));
}

}  // namespace hetrec::data::data
