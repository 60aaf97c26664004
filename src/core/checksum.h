#pragma once
// CRC-32C (Castagnoli polynomial 0x1EDC6F41, reflected 0x82F63B78), the checksum used
// by checkpoints and binary data files. Incremental: pass the previous value to extend.
// On x86-64 CPUs with SSE4.2 it runs on the crc32 instruction (several GB/s per core),
// elsewhere on slice-by-4 tables; both give the same values.
#include <cstddef>
#include <cstdint>

namespace hetrec {

uint32_t crc32c(const void* data, std::size_t size, uint32_t previous = 0);

// The CRC-32C of A followed by B from crc_a = crc32c(A), crc_b = crc32c(B) and B's
// length, without the data (GF(2) matrix powers, O(log size_b)): lets a long buffer be
// checksummed in parallel pieces.
uint32_t crc32c_combine(uint32_t crc_a, uint32_t crc_b, std::size_t size_b);

// The table-driven form, whatever the CPU: the reference the instruction path is tested against.
uint32_t crc32c_portable(const void* data, std::size_t size, uint32_t previous = 0);

}  // namespace hetrec
