// read_text_file: plain files as they are, ".xz" files decompressed, clear errors otherwise.
#include "core/text_file.h"

#include <gtest/gtest.h>
#include <lzma.h>

#include <fstream>
#include <random>
#include <string>

#include "core/error.h"

namespace hetrec {
namespace {

std::string scratch(const std::string& name) { return ::testing::TempDir() + "/" + name; }

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

std::string xz_compress(const std::string& text) {
  std::string out(lzma_stream_buffer_bound(text.size()), '\0');
  std::size_t pos = 0;
  const lzma_ret r = lzma_easy_buffer_encode(6, LZMA_CHECK_CRC64, nullptr, reinterpret_cast<const uint8_t*>(text.data()),
                                             text.size(), reinterpret_cast<uint8_t*>(out.data()), &pos, out.size());
  EXPECT_EQ(r, LZMA_OK);
  out.resize(pos);
  return out;
}

// Random printable text larger than the decoder's 64 KiB output buffer.
std::string random_text(std::size_t bytes) {
  std::mt19937 rng(20261129);
  std::string s(bytes, ' ');
  for (char& c : s) c = static_cast<char>(' ' + rng() % 95);
  return s;
}

TEST(TextFile, ReadsPlainFilesAsTheyAre) {
  const std::string text = random_text(1000);
  write_bytes(scratch("plain.json"), text);
  EXPECT_EQ(read_text_file(scratch("plain.json")), text);
}

TEST(TextFile, DecompressesXzFiles) {
  const std::string text = random_text(300000);
  write_bytes(scratch("packed.json.xz"), xz_compress(text));
  EXPECT_EQ(read_text_file(scratch("packed.json.xz")), text);
}

TEST(TextFile, TruncatedOrForeignXzIsAnIoErrorNamingTheFile) {
  const std::string packed = xz_compress(random_text(5000));
  write_bytes(scratch("cut.json.xz"), packed.substr(0, packed.size() / 2));
  try {
    read_text_file(scratch("cut.json.xz"));
    FAIL() << "expected IoError";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("cut.json.xz"), std::string::npos) << e.what();
  }
  write_bytes(scratch("plain_named.json.xz"), "{\"not\": \"compressed\"}");
  EXPECT_THROW(read_text_file(scratch("plain_named.json.xz")), IoError);
}

TEST(TextFile, MissingFileIsAnIoErrorNamingIt) {
  try {
    read_text_file(scratch("does-not-exist.json"));
    FAIL() << "expected IoError";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("does-not-exist.json"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace hetrec
