#pragma once
// Where batches come from. Parsed and validated from the [data] section by train/config.cpp.
#include <cstdint>
#include <string>

namespace hetrec::inline data {

enum class DataFormat { synthetic, criteo_tsv, binary, mlperf_multihot };
enum class CategoricalMapping { hash, modulo };  // raw 32-bit categorical -> row id
enum class OnError { fail, skip };

// The planted-teacher synthetic dataset (see data/synthetic.h).
struct SyntheticConfig {
  int64_t train_samples = 1 << 20;
  int64_t eval_samples = 1 << 16;
  uint64_t seed = 7;           // teacher and sample generation
  double zipf_exponent = 1.05; // id popularity follows rank^-s
  int teacher_dim = 4;         // width of the teacher's own embedding vectors
  double teacher_scale = 1.0;  // multiplies the teacher logit: larger = less label noise
  double label_flip = 0.0;     // extra noise: probability that a drawn label is flipped
  // > 1: each table's raw ids come from a space this many times its rows (the teacher
  // knows every raw id) and are hashed into the table's rows with collisions, as Criteo's
  // hashed categoricals are; 1: ids are the table's rows (no collisions).
  int64_t raw_ids_per_row = 1;
};

struct DataConfig {
  DataFormat format = DataFormat::synthetic;
  std::string train_path;  // criteo_tsv / binary: a file; mlperf_multihot: days (data/mlperf_multihot.h)
  std::string eval_path;
  CategoricalMapping categorical = CategoricalMapping::modulo;
  int64_t missing_categorical_id = 0;  // row used for an empty categorical field
  OnError on_error = OnError::fail;
  int prefetch_batches = 4;  // batches produced ahead by the pipeline
  int reader_threads = 2;    // threads that generate or parse inside the pipeline
  SyntheticConfig synthetic;
};

}  // namespace hetrec::data::data
