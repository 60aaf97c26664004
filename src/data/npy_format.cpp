#include "data/npy_format.h"

#include <cstring>
#include <limits>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"

namespace hetrec::inline data {
namespace {

constexpr char kNpyMagic[kNpyMagicBytes] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};
// numpy.save pads the header so that the data starts on this boundary (numpy.lib.format.ARRAY_ALIGN).
constexpr std::size_t kNpyAlign = 64;

struct TypeInfo {
  NpyType type;
  const char* descr;
  int bytes;
};
// The scalar types a reader of hetrec's inputs may meet. One-byte types carry '|' (no
// byte order); numpy writes '<' for the others on little-endian machines.
constexpr TypeInfo kTypes[] = {
    {NpyType::b1, "|b1", 1}, {NpyType::i1, "|i1", 1}, {NpyType::u1, "|u1", 1}, {NpyType::i2, "<i2", 2},
    {NpyType::u2, "<u2", 2}, {NpyType::i4, "<i4", 4}, {NpyType::u4, "<u4", 4}, {NpyType::i8, "<i8", 8},
    {NpyType::u8, "<u8", 8}, {NpyType::f4, "<f4", 4}, {NpyType::f8, "<f8", 8},
};

// A cursor over the dict text; every error names the array and the byte offset.
class DictParser {
 public:
  DictParser(std::string_view text, std::string_view name) : text_(text), name_(name) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw DataError(fmt::format("{}: malformed .npy header at byte {} of its dict: {}", name_, pos_, what));
  }
  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' ||
                                   text_[pos_] == '\r'))
      ++pos_;
  }
  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }
  void expect(char c) {
    skip_space();
    if (peek() != c) fail(fmt::format("expected '{}', got {}", c, describe_here()));
    ++pos_;
  }
  bool accept(char c) {
    skip_space();
    if (peek() != c) return false;
    ++pos_;
    return true;
  }
  // A quoted string without escapes ('...' or "...").
  std::string string_literal() {
    skip_space();
    const char quote = peek();
    if (quote != '\'' && quote != '"') fail(fmt::format("expected a quoted string, got {}", describe_here()));
    const std::size_t begin = ++pos_;
    while (!at_end() && text_[pos_] != quote) {
      if (text_[pos_] == '\\') fail("escape sequences are not expected in a .npy header");
      ++pos_;
    }
    if (at_end()) fail("unterminated string");
    return std::string(text_.substr(begin, pos_++ - begin));
  }
  bool boolean() {
    skip_space();
    if (text_.substr(pos_, 4) == "True") {
      pos_ += 4;
      return true;
    }
    if (text_.substr(pos_, 5) == "False") {
      pos_ += 5;
      return false;
    }
    fail(fmt::format("expected True or False, got {}", describe_here()));
  }
  // A non-negative decimal integer (Python 2 files may end it with 'L'), at most 2^62.
  int64_t dimension() {
    skip_space();
    constexpr int64_t kMaxDimension = int64_t{1} << 62;
    if (peek() < '0' || peek() > '9') fail(fmt::format("expected a non-negative integer, got {}", describe_here()));
    int64_t value = 0;
    while (peek() >= '0' && peek() <= '9') {
      const int digit = peek() - '0';
      if (value > (kMaxDimension - digit) / 10) fail("dimension larger than 2^62");
      value = value * 10 + digit;
      ++pos_;
    }
    if (peek() == 'L') ++pos_;
    return value;
  }
  // "(a, b, ...)" with an optional trailing comma; "()" for a scalar.
  std::vector<int64_t> tuple() {
    expect('(');
    std::vector<int64_t> out;
    if (accept(')')) return out;
    for (;;) {
      out.push_back(dimension());
      if (accept(')')) return out;
      expect(',');
      if (accept(')')) return out;
    }
  }

 private:
  std::string describe_here() const {
    if (at_end()) return "the end of the header";
    const char c = text_[pos_];
    if (c >= 0x20 && c < 0x7f) return fmt::format("'{}'", c);
    return fmt::format("byte {:#04x}", static_cast<unsigned char>(c));
  }

  std::string_view text_;
  std::string_view name_;
  std::size_t pos_ = 0;
};

uint32_t read_le(const char* p, int bytes) {
  uint32_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

}  // namespace

int64_t NpyHeader::elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int64_t NpyHeader::data_bytes() const { return elements() * item_bytes; }

const char* npy_type_descr(NpyType type) {
  for (const TypeInfo& t : kTypes)
    if (t.type == type) return t.descr;
  return "?";
}

int64_t npy_header_bytes(const char* data, std::size_t size, std::string_view name) {
  if (size < kNpyMagicBytes + 2 || std::memcmp(data, kNpyMagic, kNpyMagicBytes) != 0)
    throw DataError(fmt::format("{}: not a .npy array: expected the magic \"\\x93NUMPY\" and a version in its "
                                "first 8 bytes{}",
                                name, size < kNpyMagicBytes + 2 ? fmt::format(" (it holds {} bytes)", size) : ""));
  const int major = static_cast<unsigned char>(data[6]);
  const int minor = static_cast<unsigned char>(data[7]);
  if ((major != 1 && major != 2 && major != 3) || minor != 0)
    throw DataError(fmt::format("{}: .npy format version {}.{}: expected 1.0, 2.0 or 3.0", name, major, minor));
  const std::size_t preamble = major == 1 ? kNpyPreambleBytesV1 : kNpyPreambleBytesV2;
  if (size < preamble)
    throw DataError(fmt::format("{}: truncated .npy header: {} bytes, the version {}.0 preamble needs {}", name,
                                size, major, preamble));
  const std::size_t dict = read_le(data + 8, major == 1 ? 2 : 4);
  if (dict > kMaxNpyDictBytes)
    throw DataError(fmt::format("{}: .npy header dict of {} bytes: expected at most {} (corrupt header)", name,
                                dict, kMaxNpyDictBytes));
  return static_cast<int64_t>(preamble + dict);
}

NpyHeader parse_npy_header(const char* data, std::size_t size, std::string_view name) {
  NpyHeader h;
  h.header_bytes = npy_header_bytes(data, size, name);
  h.major = static_cast<unsigned char>(data[6]);
  h.minor = 0;
  if (size < static_cast<std::size_t>(h.header_bytes))
    throw DataError(fmt::format("{}: truncated .npy header: {} bytes, the header says {}", name, size,
                                h.header_bytes));
  const std::size_t preamble = h.major == 1 ? kNpyPreambleBytesV1 : kNpyPreambleBytesV2;
  const std::string_view text(data + preamble, static_cast<std::size_t>(h.header_bytes) - preamble);
  // Versions 1.0 and 2.0 are latin-1 text; only 3.0 allows UTF-8. No plain-array header
  // holds anything beyond ASCII.
  for (char c : text)
    if (static_cast<unsigned char>(c) >= 0x80 || (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != ' ' &&
                                                   c != '\t' && c != '\r'))
      throw DataError(fmt::format("{}: .npy header holds a non-ASCII or control byte {:#04x}", name,
                                  static_cast<unsigned char>(c)));

  DictParser p(text, name);
  bool have_descr = false, have_order = false, have_shape = false;
  bool fortran = false;
  p.expect('{');
  while (!p.accept('}')) {
    const std::string key = p.string_literal();
    p.expect(':');
    if (key == "descr" && !have_descr) {
      p.skip_space();
      if (p.peek() == '[') p.fail("'descr' is a structured type (a list of fields): expected a scalar type such as '<f4'");
      h.descr = p.string_literal();
      have_descr = true;
    } else if (key == "fortran_order" && !have_order) {
      fortran = p.boolean();
      have_order = true;
    } else if (key == "shape" && !have_shape) {
      h.shape = p.tuple();
      have_shape = true;
    } else if (key == "descr" || key == "fortran_order" || key == "shape") {
      p.fail(fmt::format("key '{}' appears twice", key));
    } else {
      p.fail(fmt::format("unexpected key '{}': expected only 'descr', 'fortran_order' and 'shape'", key));
    }
    if (p.accept('}')) break;
    p.expect(',');
  }
  p.skip_space();
  if (!p.at_end()) p.fail("unexpected text after the closing '}'");
  if (!have_descr || !have_order || !have_shape)
    throw DataError(fmt::format("{}: .npy header lacks the key '{}'", name,
                                !have_descr ? "descr" : !have_order ? "fortran_order" : "shape"));
  if (fortran)
    throw DataError(fmt::format("{}: array is stored in Fortran (column-major) order: expected fortran_order False "
                                "(save it C-contiguous, e.g. numpy.ascontiguousarray)",
                                name));

  bool known = false;
  for (const TypeInfo& t : kTypes) {
    // '=' (native) and '<' mean the same on the little-endian machines hetrec runs on,
    // and numpy accepts '<' or '=' for one-byte types as well as '|'.
    const std::string_view d = h.descr;
    if (d.size() == 3 && d.substr(1) == std::string_view(t.descr + 1) &&
        (d[0] == t.descr[0] || d[0] == '=' || (t.bytes == 1 && d[0] == '<'))) {
      h.type = t.type;
      h.item_bytes = t.bytes;
      known = true;
      break;
    }
  }
  if (!known) {
    if (!h.descr.empty() && h.descr[0] == '>')
      throw DataError(fmt::format("{}: element type '{}' is big-endian: expected little-endian ('<')", name, h.descr));
    throw DataError(fmt::format("{}: element type '{}': expected one of |b1 |i1 |u1 <i2 <u2 <i4 <u4 <i8 <u8 <f4 <f8",
                                name, h.descr));
  }
  // The data size must fit an int64 (every reader computes byte offsets from it).
  int64_t n = h.item_bytes;
  for (int64_t d : h.shape) {
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d)
      throw DataError(fmt::format("{}: shape ({}) holds more than 2^63 bytes (corrupt header)", name,
                                  fmt::join(h.shape, ", ")));
    n *= d;
  }
  return h;
}

std::string make_npy_header(NpyType type, const std::vector<int64_t>& shape) {
  std::string shape_text = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) shape_text += (i ? ", " : "") + std::to_string(shape[i]);
  if (shape.size() == 1) shape_text += ",";
  shape_text += ")";
  std::string dict = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", npy_type_descr(type),
                                 shape_text);
  const std::size_t unpadded = kNpyPreambleBytesV1 + dict.size() + 1;  // + '\n'
  dict.append((kNpyAlign - unpadded % kNpyAlign) % kNpyAlign, ' ');
  dict += '\n';
  std::string out(kNpyMagic, kNpyMagicBytes);
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(dict.size() & 0xff);
  out += static_cast<char>((dict.size() >> 8) & 0xff);
  return out + dict;
}

}  // namespace hetrec::data::data
