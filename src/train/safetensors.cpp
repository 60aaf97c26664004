#include "train/safetensors.h"

#include <cstdint>
#include <nlohmann/json.hpp>
#include <set>

#include "core/error.h"
#include "core/exclusive_file.h"

namespace hetrec::inline train {
namespace {

// The data section starts at a multiple of this many bytes (the format pads its header
// with spaces to keep the tensors aligned for readers that map the file).
constexpr std::size_t kDataAlignment = 8;

}  // namespace

std::string_view safetensors_dtype(DType dtype) {
  switch (dtype) {
    case DType::f32: return "F32";
    case DType::f16: return "F16";
    case DType::bf16: return "BF16";
    case DType::f8e4m3: return "F8_E4M3";
    case DType::f8e5m2: return "F8_E5M2";
    case DType::f64: return "F64";
    case DType::i32: return "I32";
    case DType::i64: return "I64";
    case DType::u8: return "U8";
  }
  throw InternalError("safetensors_dtype: unknown dtype code " + std::to_string(static_cast<int>(dtype)));
}

void write_safetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  nlohmann::json header = nlohmann::json::object();
  std::set<std::string> names;
  uint64_t offset = 0;
  for (const NamedTensor& nt : tensors) {
    const Tensor& t = nt.tensor;
    if (t.device().kind != DeviceKind::cpu || !t.is_contiguous())
      throw InternalError("safetensors tensor '" + nt.name + "' must be a contiguous host tensor");
    if (nt.name == "__metadata__" || !names.insert(nt.name).second)
      throw InternalError("safetensors tensor name '" + nt.name + "' is reserved or used twice");
    const uint64_t end = offset + t.nbytes();
    header[nt.name] = {{"dtype", std::string(safetensors_dtype(t.dtype()))},
                       {"shape", t.shape()},
                       {"data_offsets", {offset, end}}};
    offset = end;
  }
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::string text = header.dump();
  const std::size_t prefix = sizeof(uint64_t);
  text.append((kDataAlignment - (prefix + text.size()) % kDataAlignment) % kDataAlignment, ' ');

  ExclusiveFile file(path);
  uint64_t header_len = text.size();
  unsigned char len_bytes[sizeof header_len];
  for (std::size_t i = 0; i < sizeof header_len; ++i) len_bytes[i] = static_cast<unsigned char>(header_len >> (8 * i));
  file.write(len_bytes, sizeof len_bytes);
  file.write(text.data(), text.size());
  for (const NamedTensor& nt : tensors) file.write(nt.tensor.raw(), nt.tensor.nbytes());
  file.commit();
}

}  // namespace hetrec::train::train
