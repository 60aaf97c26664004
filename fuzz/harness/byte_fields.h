#pragma once
// Little-endian fields inside a byte string: the fuzz targets read and patch file
// structures (to repair checksums) without trusting that the structure is whole.
#include <cstdint>
#include <cstring>
#include <string>

namespace hetrec::fuzz {

template <class T>
T field_at(const std::string& bytes, std::size_t offset) {
  T value{};
  std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return value;
}

template <class T>
void set_field_at(std::string& bytes, std::size_t offset, T value) {
  std::memcpy(bytes.data() + offset, &value, sizeof(T));
}

}  // namespace hetrec::fuzz
