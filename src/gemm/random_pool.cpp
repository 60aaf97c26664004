// GPU builds only: the pool lives in device memory.
#if defined(HETREC_WITH_GPU)
#include "gemm/random_pool.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "gpu/memory.h"

namespace hetrec::inline gemm {

namespace {
// Values generated on the host per pool; the rest of the pool repeats them.
constexpr std::size_t kSeedBlockElements = std::size_t{1} << 22;
constexpr std::size_t kMinPoolBytes = 256;  // one block of cuBLASLt's widest alignment
}  // namespace

gpu::DeviceBuffer random_device_pool(DType type, std::size_t bytes, uint64_t seed, uint64_t stream) {
  gpu::DeviceBuffer pool(std::max(bytes, kMinPoolBytes));
  const std::size_t esize = dtype_size(type);
  const std::size_t n = std::min(kSeedBlockElements, pool.bytes() / esize);
  std::vector<uint8_t> host(n * esize);
  Rng rng(seed, stream);
  for (std::size_t i = 0; i < n; ++i) {
    const float v = static_cast<float>(rng.normal());
    switch (type) {
      case DType::f32: std::memcpy(&host[i * 4], &v, 4); break;
      case DType::bf16: {
        const uint16_t h = f32_to_bf16(v);
        std::memcpy(&host[i * 2], &h, 2);
        break;
      }
      case DType::f16: {
        const uint16_t h = f32_to_f16(v);
        std::memcpy(&host[i * 2], &h, 2);
        break;
      }
      case DType::f8e4m3: host[i] = f32_to_f8e4m3(v); break;
      default: throw InternalError("random_device_pool: no random values of " + std::string(dtype_name(type)));
    }
  }
  gpu::memcpy_sync(pool.get(), host.data(), host.size(), gpu::CopyKind::host_to_device);
  auto* base = pool.as<uint8_t>();
  std::size_t filled = host.size();
  while (filled < pool.bytes()) {
    const std::size_t chunk = std::min(filled, pool.bytes() - filled);
    gpu::memcpy_sync(base + filled, base, chunk, gpu::CopyKind::device_to_device);
    filled += chunk;
  }
  return pool;
}

}  // namespace hetrec::gemm::gemm
#endif  // HETREC_WITH_GPU
