#include "plan/tuned_kernel_ratios.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <utility>

#include "core/error.h"
#include "tune/kernel_families.h"
#include "tunable/small_gemm/small_gemm_cost.h"

namespace hetrec::inline plan {
namespace {

// The geometric mean of time_us / default_us over the winners `match` accepts (those with a
// built-in time), and how many there were.
template <class Match>
std::pair<double, int> geometric_mean_ratio(const tune::WinnersStore& store, Match match) {
  double log_sum = 0.0;
  int n = 0;
  for (const tune::Winner& w : store.winners())
    if (w.default_us > 0.0 && match(w)) {
      log_sum += std::log(w.time_us / w.default_us);
      ++n;
    }
  return {n > 0 ? std::exp(log_sum / n) : 0.0, n};
}

}  // namespace

std::map<std::string, std::string> described_tuned_variants(const std::string& description) {
  std::map<std::string, std::string> out;
  for (const tune::KernelFamily& f : tune::kernel_families()) {
    const std::string marker = f.label + ": tuned variant ";
    for (std::size_t at = description.find(marker); at != std::string::npos; at = description.find(marker, at + 1)) {
      // The label starts a clause: "dot interaction: " is not the end of "... dot interaction backward: ".
      if (at > 0 && description[at - 1] != ' ' && description[at - 1] != ';' && description[at - 1] != ':') continue;
      const std::size_t begin = at + marker.size();
      const std::size_t end = description.find(';', begin);
      std::istringstream words(description.substr(begin, end == std::string::npos ? std::string::npos : end - begin));
      std::string word, params;
      while (words >> word && word.find('=') != std::string::npos) params += (params.empty() ? "" : " ") + word;
      if (!params.empty()) out[f.kernel] = params;
      break;
    }
  }
  return out;
}

TunedKernelRatios recorded_tuned_ratios(const std::map<std::string, std::string>& variants, const std::string& gpu,
                                        const StepWork& work, const tune::WinnersStore& store,
                                        const std::string& winners_path) {
  TunedKernelRatios ratios;
  for (const auto& variant : variants) {
    const std::string& family = variant.first;  // the names the lambdas below capture
    const std::string& params = variant.second;
    if (std::none_of(work.terms.begin(), work.terms.end(), [&](const StepTerm& t) { return t.kernel == family; }))
      continue;
    const auto [ratio, n] = geometric_mean_ratio(store, [&](const tune::Winner& w) {
      return w.key.kernel == family && w.key.gpu == gpu && tune::describe(w.params) == params;
    });
    if (n == 0)
      throw ConfigError(winners_path + ": no " + family + " winner on " + gpu + " with " + params +
                        ", the variant the run loaded: its time against the built-in kernel's is unknown");
    ratios[family] = ratio;
  }
  return ratios;
}

TunedKernelRatios fresh_tuned_ratios(const tune::WinnersStore& store, const Hardware& hw, const std::string& source_hash) {
  const auto fresh = [&](const tune::Winner& w) {
    return w.key.kernel != tune::kSmallGemmKernel && w.key.source_hash == source_hash && describes_device(hw, w.key.gpu);
  };
  TunedKernelRatios ratios;
  for (const tune::Winner& w : store.winners())
    if (fresh(w) && !ratios.count(w.key.kernel)) {
      const auto [ratio, n] = geometric_mean_ratio(
          store, [&](const tune::Winner& other) { return other.key.kernel == w.key.kernel && fresh(other); });
      if (n > 0) ratios[w.key.kernel] = ratio;
    }
  return ratios;
}

void apply_tuned_ratios(StepWork& work, const TunedKernelRatios& ratios) {
  for (StepTerm& t : work.terms)
    if (const auto r = ratios.find(t.kernel); !t.kernel.empty() && r != ratios.end()) t.tuned_ratio = r->second;
}

}  // namespace hetrec::plan::plan
