// The libFuzzer entry point of one target, chosen at compile time by HETREC_FUZZ_TARGET
// (a function of harness/fuzz_targets.h). A typed rejection returns normally; a finding
// or any other exception is reported and aborts, which libFuzzer records as a crash.
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "harness/fuzz_support.h"
#include "harness/fuzz_targets.h"

#ifndef HETREC_FUZZ_TARGET
#error "compile with -DHETREC_FUZZ_TARGET=<target function>"
#endif

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    hetrec::fuzz::run_target(hetrec::fuzz::HETREC_FUZZ_TARGET, std::span<const uint8_t>(data, size));
  } catch (const hetrec::fuzz::FindingError& e) {
    std::fprintf(stderr, "hetrec fuzz finding: %s\n", e.what.c_str());
    std::abort();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hetrec fuzz finding: escaped exception (not a typed rejection): %s\n", e.what());
    std::abort();
  }
  return 0;
}
