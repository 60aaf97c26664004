#include "gemm_perf/gemm_oracle_merge.h"

#include <map>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/text_file.h"
#include "gemm_perf/gemm_oracle.h"

namespace hetrec::inline gemm_perf {

namespace {

using nlohmann::json;

// Fields every piece must share: what was measured on, and how.
constexpr const char* kSameFields[] = {"schema", "gpu", "driver", "cublaslt_version", "cuda_runtime", "launches",
                                       "warmup", "timing", "rotation_bytes", "l2_bytes", "candidate_columns",
                                       "max_candidates_per_shape"};

}  // namespace

std::string merge_gemm_oracles(const std::vector<std::string>& paths) {
  if (paths.size() < 2) throw ConfigError("gemm merge: expected at least two result files, found " +
                                          std::to_string(paths.size()));
  json merged;
  std::map<std::string, std::string> seen;  // shape id -> file
  json from = json::array();
  bool complete = true;
  std::size_t not_run = 0;
  for (const std::string& path : paths) {
    const std::string text = read_text_file(path);
    (void)parse_gemm_oracle(text, path);  // the whole piece is a valid record
    const json piece = json::parse(text);
    if (merged.is_null()) {
      merged = piece;
      merged["shapes"] = json::array();
    } else {
      for (const char* f : kSameFields) {
        const json a = merged.value(f, json()), b = piece.value(f, json());
        if (a != b)
          throw ConfigError("gemm merge: " + path + ": " + f + " is " + b.dump() + " but " + paths.front() +
                            " has " + a.dump() + ": pieces of one corpus must be measured alike");
      }
    }
    for (const json& s : piece.at("shapes")) {
      const std::string id = s.at("id").get<std::string>();
      const auto [it, fresh] = seen.emplace(id, path);
      if (!fresh) throw ConfigError("gemm merge: shape " + id + " is in both " + it->second + " and " + path);
      merged["shapes"].push_back(s);
    }
    complete = complete && piece.value("complete", false);
    not_run += piece.value("shapes_not_run", std::size_t{0});
    from.push_back(json{{"file", path},
                        {"command", piece.value("command", "")},
                        {"date", piece.value("date", "")},
                        {"commit", piece.value("commit", "")},
                        {"shard", piece.value("shard", "0/1")},
                        {"shapes", piece.at("shapes").size()}});
  }
  merged["complete"] = complete;
  merged["shapes_not_run"] = not_run;
  merged["merged_from"] = std::move(from);
  merged.erase("shard");  // the first piece's; each piece's stays in merged_from
  merged["command"] = "hetrec gemm merge";
  for (const std::string& p : paths) merged["command"] = merged["command"].get<std::string>() + " " + p;
  return merged.dump() + "\n";
}

}  // namespace hetrec::gemm_perf::gemm_perf
