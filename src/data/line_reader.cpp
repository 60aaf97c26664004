#include "data/line_reader.h"

#include <cerrno>
#include <cstring>
#include <utility>

#include "core/error.h"

namespace hetrec::inline data {

LineReader::LineReader(std::string path, const std::string& what)
    : path_(std::move(path)), buffer_(kBufferBytes) {
  file_ = std::fopen(path_.c_str(), "rb");
  if (file_ == nullptr)
    throw IoError(path_ + ": cannot open for reading" + (what.empty() ? "" : " (" + what + ")") + ": " +
                  std::strerror(errno));
}

LineReader::~LineReader() {
  if (file_ != nullptr) std::fclose(file_);
}

bool LineReader::refill() {
  if (eof_) return false;
  begin_ = 0;
  end_ = std::fread(buffer_.data(), 1, buffer_.size(), file_);
  if (end_ < buffer_.size()) {
    if (std::ferror(file_)) throw IoError(path_ + ": read error: " + std::strerror(errno));
    eof_ = true;
  }
  return end_ > 0;
}

bool LineReader::next(std::string& line) {
  line.clear();
  bool any = false;
  for (;;) {
    if (begin_ == end_ && !refill()) break;
    any = true;
    const char* start = buffer_.data() + begin_;
    const auto* newline = static_cast<const char*>(std::memchr(start, '\n', end_ - begin_));
    if (newline != nullptr) {
      line.append(start, static_cast<std::size_t>(newline - start));
      begin_ += static_cast<std::size_t>(newline - start) + 1;
      break;
    }
    line.append(start, end_ - begin_);
    begin_ = end_;
  }
  if (!any) return false;
  if (!line.empty() && line.back() == '\r') line.pop_back();
  ++line_number_;
  return true;
}

void LineReader::rewind() {
  if (std::fseek(file_, 0, SEEK_SET) != 0) throw IoError(path_ + ": cannot seek: " + std::strerror(errno));
  std::clearerr(file_);
  begin_ = end_ = 0;
  eof_ = false;
  line_number_ = 0;
}

}  // namespace hetrec::data::data
