#pragma once
// The safetensors format (https://github.com/huggingface/safetensors), written without
// the library:
//   u64 header_len (little-endian) | header: JSON text, padded with spaces so that the
//   data starts at a multiple of 8 bytes | data: every tensor's bytes, back to back.
// The header maps each tensor name to {"dtype", "shape", "data_offsets": [begin, end)}
// (offsets into the data), and "__metadata__" to a map of strings.
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "core/named_tensor.h"

namespace hetrec::inline train {

// The format's name of a dtype: F32, F16, BF16, F8_E4M3, F8_E5M2, F64, I32, I64, U8.
std::string_view safetensors_dtype(DType dtype);

// Writes `tensors` (contiguous host tensors, data in the order given) and `metadata` to
// `path` through a temporary file created exclusively and renamed into place
// (core/exclusive_file.h). Throws IoError naming the file when the write fails (the
// destination is then untouched) and InternalError for duplicate names or a tensor not
// on the host.
void write_safetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                       const std::map<std::string, std::string>& metadata);

}  // namespace hetrec::train::train
