// Fuzz target: the GEMM selection cache file (gemm_perf/gemm_selection_cache.h).
#include <cstdio>
#include <string>

#include "core/checksum.h"
#include "core/log.h"
#include "harness/fuzz_support.h"
#include "harness/fuzz_targets.h"
#include "harness/gemm_cache_validators.h"
#include "gemm_perf/gemm_selection_cache.h"

namespace hetrec::fuzz {
namespace {

// Mode byte: bit 0 rewrites the first "end" line after the validators with the entry
// count and CRC-32C of the text before it, so that mutations reach the entry parser.
void reseal(std::string& f) {
  std::size_t begin = 0, entries = 0;
  bool first = true;
  while (begin < f.size()) {
    const std::size_t nl = f.find('\n', begin);
    const std::size_t end = nl == std::string::npos ? f.size() : nl;
    const std::string_view line(f.data() + begin, end - begin);
    if (!first && line.rfind("end ", 0) == 0) {
      char crc[12];
      std::snprintf(crc, sizeof crc, "%08x", crc32c(f.data(), begin));
      f.replace(begin, end - begin, "end entries=" + std::to_string(entries) + " crc32c=" + crc);
      return;
    }
    if (line.rfind("entry ", 0) == 0) ++entries;
    first = false;
    begin = end + 1;
  }
}

}  // namespace

void gemm_cache(std::span<const uint8_t> data) {
  FuzzInput in(data);
  const uint8_t mode = in.byte();
  std::string bytes(in.rest());
  if (mode & 1) reseal(bytes);
  const MemoryFile file(bytes);
  const GemmCacheValidators validators = fuzz_cache_validators();
  const Logger quiet(LogLevel::quiet);
  GemmSelectionCache cache(validators);
  if (!accepted([&] { cache = GemmSelectionCache::load(file.path(), validators, quiet); })) return;
  if (cache.size() == 0) return;
  // What was loaded survives a save and a load unchanged.
  const ScratchDirectory dir;
  const std::string path = dir.path() + "/gemm_cache.txt";
  cache.save(path);
  const GemmSelectionCache again = GemmSelectionCache::load(path, validators, quiet);
  if (again.size() != cache.size())
    finding(std::to_string(cache.size()) + " entries loaded, " + std::to_string(again.size()) +
            " after a save/load round trip");
}

}  // namespace hetrec::fuzz
