#pragma once
// Where the program finds its data files (hardware descriptions, configs, tuned winners):
// beside its own binary in an installed tree (<prefix>/bin/hetrec or the Python module
// under <prefix>/lib -> <prefix>/share/hetrec), or the source tree for a binary that
// lives in the build tree it was compiled in.
#include <string>

namespace hetrec {

// The file this code was loaded from: the Python module's shared object when it runs in
// one, else the executable (/proc/self/exe).
std::string loaded_binary_path();

// The data folder: <prefix>/share/hetrec for an installed program (<prefix>/bin) or module
// (<prefix>/lib/python3/dist-packages) where that folder exists, else the source tree for a
// binary inside the build tree it was compiled in, else the installed location it was
// expected at, so that a missing data file names where it was looked for.
std::string data_dir();

}  // namespace hetrec
