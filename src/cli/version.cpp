#include <string>

#include "cli/build_info.h"
#include "gemm/blas_library.h"
#if defined(HETREC_WITH_GPU)
#include "gpu/library_versions.h"
#include "kernels/rtc_sources.h"
#endif

namespace hetrec::cli {

std::string version_text() {
  std::string s = std::string("hetrec ") + kBuildVersion + "\n";
  auto line = [&s](const std::string& what, const std::string& value) { s += what + ": " + value + "\n"; };
  line("commit", kBuildCommit);
  line("build type", kBuildType);
  line("compiler", kBuildCompiler);
  if (*kBuildDeviceCompiler) line("device compiler", kBuildDeviceCompiler);
#if defined(HETREC_WITH_GPU)
  line("backends", "cpu, gpu");
#else
  line("backends", "cpu");
#endif
  line("CPU BLAS", cpu_blas::library_text());
#if defined(HETREC_WITH_GPU)
  for (const auto& [what, value] : gpu::library_versions()) line(what, value);
  // The hash a tuned winner must carry to be loaded by this build (tune/winners.h).
  line("kernel sources", kernels::rtc_sources_hash());
#endif
  s.pop_back();  // CLI11 ends the text with a newline of its own
  return s;
}

}  // namespace hetrec::cli
