#include "tunable/small_gemm/small_gemm_sources.h"

#include "kernels/rtc_sources.h"

namespace hetrec::kernels {

std::string small_gemm_sources_hash() {
  // FNV-1a runs over the bytes in order, so hashing the concatenation equals hashing
  // file by file as rtc_sources_hash does.
  std::string all;
  for (const gpu::RtcHeader& f : small_gemm_source_files()) {
    all += f.name;
    all += '\0';
    all += f.text;
  }
  return fnv1a_hex(all);
}

}  // namespace hetrec::kernels
