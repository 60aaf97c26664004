#include "tune/occupancy.h"

#include <algorithm>

#include "core/error.h"

namespace hetrec::tune {

namespace {
// CUDA C++ Programming Guide, compute capabilities table (5.x to 9.0 and 10.0): registers
// are allocated to a warp in units of 256, and an SM holds at most 32 resident blocks.
constexpr int kRegisterAllocationUnit = 256;
constexpr int kMaxBlocksPerUnit = 32;
// Bytes in one 32-bit register.
constexpr int kRegisterBytes = 4;
}  // namespace

Occupancy occupancy(const Hardware& hw, const ResourceReport& r, int block_threads) {
  if (hw.vendor != Vendor::nvidia)
    throw ConfigError("tune: occupancy rules are implemented for NVIDIA GPUs only, '" + hw.name + "' is " +
                      std::string(vendor_name(hw.vendor)));
  if (block_threads <= 0 || hw.warp_size <= 0 || hw.max_threads_per_unit <= 0)
    throw InternalError("occupancy: incomplete hardware description or block size");
  Occupancy o;
  if (r.max_threads_per_block > 0 && block_threads > r.max_threads_per_block) {
    o.limiter = "registers (block larger than the kernel allows)";
    return o;
  }
  const int warps_per_block = (block_threads + hw.warp_size - 1) / hw.warp_size;
  const int by_threads = hw.max_threads_per_unit / block_threads;
  int by_registers = kMaxBlocksPerUnit;
  if (r.registers > 0) {
    const int regs_per_warp =
        (r.registers * hw.warp_size + kRegisterAllocationUnit - 1) / kRegisterAllocationUnit * kRegisterAllocationUnit;
    const int registers_per_unit = static_cast<int>(hw.register_file_kb_per_unit * 1024 / kRegisterBytes);
    by_registers = registers_per_unit / regs_per_warp / warps_per_block;
  }
  int by_shared = kMaxBlocksPerUnit;
  const std::size_t shared = r.static_shared_bytes + r.dynamic_shared_bytes;
  if (shared > 0) by_shared = static_cast<int>(hw.shared_kb_per_unit * 1024 / static_cast<double>(shared));
  o.blocks_per_unit = std::min({by_threads, by_registers, by_shared, kMaxBlocksPerUnit});
  o.limiter = o.blocks_per_unit == by_threads                                ? "threads"
              : o.blocks_per_unit == by_registers && r.registers > 0         ? "registers"
              : o.blocks_per_unit == by_shared && shared > 0                 ? "shared memory"
                                                                             : "blocks";
  o.fraction = static_cast<double>(o.blocks_per_unit * block_threads) / hw.max_threads_per_unit;
  return o;
}

}  // namespace hetrec::tune
