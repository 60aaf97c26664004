#pragma once
// Typed errors. Every message names where the problem is (file, line, field or config
// key) and what was expected; the CLI prints it and exits non-zero.
#include <stdexcept>
#include <string>

namespace hetrec {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// A configuration key is unknown, has the wrong type or is out of range.
class ConfigError : public Error {
 public:
  using Error::Error;
};

// Input data is malformed: a TSV line, a binary file, an id out of range.
class DataError : public Error {
 public:
  using Error::Error;
};

// A file could not be opened, read, written or synced.
class IoError : public Error {
 public:
  using Error::Error;
};

// A checkpoint is truncated, foreign or fails its checksum.
class CheckpointError : public Error {
 public:
  using Error::Error;
};

// Training diverged: a NaN or infinite loss or gradient.
class NumericError : public Error {
 public:
  using Error::Error;
};

// A device or host allocation could not be satisfied.
class OutOfMemoryError : public Error {
 public:
  using Error::Error;
};

// A device runtime, BLAS or collective call failed.
class DeviceError : public Error {
 public:
  using Error::Error;
};

// A programming error inside hetrec (never caused by user input).
class InternalError : public Error {
 public:
  using Error::Error;
};

}  // namespace hetrec

// Checks an internal invariant; user input must be validated with a typed error instead.
#define HETREC_CHECK(cond, msg)                                                         \
  do {                                                                                  \
    if (!(cond))                                                                        \
      throw ::hetrec::InternalError(std::string(__FILE__) + ":" + std::to_string(__LINE__) + \
                                    ": check failed: " #cond ": " + (msg));             \
  } while (0)
