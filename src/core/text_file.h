#pragma once
// Whole-file reads of text files that may be stored xz-compressed (results files kept in
// the repository are compressed; a name ending in ".xz" is decompressed on read).
#include <string>

namespace hetrec {

// Throws IoError naming the file when it cannot be opened, read or decompressed.
std::string read_text_file(const std::string& path);

}  // namespace hetrec
