#include "core/text_file.h"

#include <lzma.h>

#include <fstream>
#include <iterator>

#include "core/error.h"

namespace hetrec {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string xz_decompress(const std::string& packed, const std::string& path) {
  lzma_stream stream = LZMA_STREAM_INIT;
  // No memory limit beyond the machine's; concatenated streams are accepted.
  if (lzma_stream_decoder(&stream, UINT64_MAX, LZMA_CONCATENATED) != LZMA_OK)
    throw IoError(path + ": cannot start the xz decoder");
  std::string out;
  char buffer[1 << 16];
  stream.next_in = reinterpret_cast<const uint8_t*>(packed.data());
  stream.avail_in = packed.size();
  lzma_ret ret = LZMA_OK;
  while (ret == LZMA_OK) {
    stream.next_out = reinterpret_cast<uint8_t*>(buffer);
    stream.avail_out = sizeof(buffer);
    ret = lzma_code(&stream, stream.avail_in == 0 ? LZMA_FINISH : LZMA_RUN);
    out.append(buffer, sizeof(buffer) - stream.avail_out);
  }
  lzma_end(&stream);
  if (ret != LZMA_STREAM_END)
    throw IoError(path + ": not a complete xz file (decoder status " + std::to_string(static_cast<int>(ret)) + ")");
  return out;
}

}  // namespace

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError(path + ": cannot open for reading");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw IoError(path + ": read failed");
  return ends_with(path, ".xz") ? xz_decompress(text, path) : text;
}

}  // namespace hetrec
