#include "kernels/rtc_sources.h"

#include <cstdio>

namespace hetrec::kernels {

namespace {
// FNV-1a 64-bit parameters (Fowler, Noll, Vo; the published offset basis and prime).
constexpr uint64_t kFnvOffset = 0xcbf29ce484222325ull;
constexpr uint64_t kFnvPrime = 0x100000001b3ull;

uint64_t fnv1a(uint64_t h, const std::string& text) {
  for (unsigned char c : text) h = (h ^ c) * kFnvPrime;
  return h;
}

std::string hex(uint64_t h) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}
}  // namespace

std::string fnv1a_hex(const std::string& text) { return hex(fnv1a(kFnvOffset, text)); }

std::string rtc_sources_hash() {
  uint64_t h = kFnvOffset;
  for (const gpu::RtcHeader& f : rtc_source_files()) {
    h = fnv1a(h, f.name);
    h = fnv1a(h, std::string(1, '\0'));
    h = fnv1a(h, f.text);
  }
  return hex(h);
}

const char* rtc_element_type(DType t) {
  switch (t) {
    case DType::f32: return "float";
    case DType::f16: return "hetrec::kernels::F16Bits";
    case DType::bf16: return "hetrec::kernels::Bf16Bits";
    default: return nullptr;
  }
}

}  // namespace hetrec::kernels
