#include "core/install_paths.h"

#include <dlfcn.h>

#include <filesystem>
#include <system_error>

namespace hetrec {
namespace {

namespace fs = std::filesystem;

// The install layout (cmake/install.cmake): the program in <prefix>/bin, the Python module
// in <prefix>/lib/python3/dist-packages, the data in <prefix>/share/hetrec.
constexpr const char* kFromProgram = "../share/hetrec";
constexpr const char* kFromModule = "../../../share/hetrec";

bool inside(const fs::path& path, const fs::path& dir) {
  const fs::path rel = path.lexically_relative(dir);
  return !rel.empty() && *rel.begin() != "..";
}

// The shared object this code is part of, when it is one (the Python module).
fs::path shared_object() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&shared_object), &info) == 0 || info.dli_fname == nullptr) return {};
  const fs::path object(info.dli_fname);
  if (object.extension() != ".so") return {};  // the main program (named as it was started)
  std::error_code ec;
  const fs::path canonical = fs::weakly_canonical(object, ec);
  return ec ? fs::path() : canonical;
}

}  // namespace

std::string loaded_binary_path() {
  const fs::path object = shared_object();
  if (!object.empty()) return object.string();
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : exe.string();
}

std::string data_dir() {
  const bool module = !shared_object().empty();
  const fs::path binary(loaded_binary_path());
  const fs::path installed = (binary.parent_path() / (module ? kFromModule : kFromProgram)).lexically_normal();
  std::error_code ec;
  if (fs::is_directory(installed, ec)) return installed.string();
  const fs::path build_tree = fs::weakly_canonical(fs::path(HETREC_BINARY_DIR), ec);
  if (!binary.empty() && !ec && inside(binary, build_tree)) return HETREC_SOURCE_DIR;
  return installed.string();
}

}  // namespace hetrec
