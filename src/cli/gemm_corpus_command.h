#pragma once
// `hetrec gemm merge | features | ranker-eval`: the oracle corpus's pieces merged, its
// ranker features written for training, and a trained ranker judged held out by family.
#include <CLI/CLI.hpp>

#include "cli/commands.h"

namespace hetrec::cli {

void add_gemm_corpus_commands(CLI::App* gemm, Action& action);

}  // namespace hetrec::cli
