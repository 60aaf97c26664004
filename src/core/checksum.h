#pragma once
// CRC-32C (Castagnoli polynomial 0x1EDC6F41, reflected 0x82F63B78), the checksum used
// by checkpoints and binary data files. Incremental: pass the previous value to extend.
#include <cstddef>
#include <cstdint>

namespace hetrec {

uint32_t crc32c(const void* data, std::size_t size, uint32_t previous = 0);

}  // namespace hetrec
