#pragma once
// Which part of a dataset a source reads: the training split or the held-out one.
#include <string_view>

namespace hetrec::inline data {

enum class Split { train, eval };

constexpr std::string_view split_name(Split split) { return split == Split::train ? "train" : "eval"; }

}  // namespace hetrec::data::data
