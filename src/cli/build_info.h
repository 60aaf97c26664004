#pragma once
// What `hetrec --version` prints: the version, the commit, the build and the libraries.
#include <string>

namespace hetrec::cli {

// Written at configure time into the build directory (src/cli/build_info.cpp.in), so
// only the program links them and a new commit rebuilds one small file.
extern const char* const kBuildVersion;   // the CMake project version
extern const char* const kBuildCommit;    // `git describe --always --dirty` at configure time, or "unknown"
extern const char* const kBuildType;      // CMAKE_BUILD_TYPE
extern const char* const kBuildCompiler;  // C++ compiler id and version
extern const char* const kBuildDeviceCompiler;  // CUDA compiler id and version, or ""

// Lines "hetrec <version>", then "<what>: <value>" for the commit, build type, compiler,
// backends, the CPU BLAS, and in GPU builds the device libraries.
std::string version_text();

}  // namespace hetrec::cli
