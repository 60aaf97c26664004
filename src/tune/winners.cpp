#include "tune/winners.h"

#include <cstdio>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace hetrec::tune {

namespace {
constexpr int kSchemaVersion = 1;

nlohmann::json key_json(const WinnerKey& k) {
  return {{"kernel", k.kernel}, {"shape", k.shape}, {"gpu", k.gpu}, {"compute_capability", k.compute_capability},
          {"driver_version", k.driver_version}, {"source_hash", k.source_hash}};
}

template <class T>
T field(const nlohmann::json& j, const char* name, const std::string& where) {
  if (!j.contains(name)) throw ConfigError(where + ": missing key '" + name + "'");
  try {
    return j.at(name).get<T>();
  } catch (const nlohmann::json::exception&) {
    throw ConfigError(where + ": key '" + name + "' has the wrong type (" + j.at(name).dump() + ")");
  }
}
}  // namespace

WinnersStore WinnersStore::load(const std::string& path) {
  WinnersStore store;
  std::ifstream f(path);
  if (!f) return store;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(f);
  } catch (const nlohmann::json::parse_error& e) {
    throw ConfigError(path + ": not valid JSON: " + e.what());
  }
  if (field<int>(j, "schema_version", path) != kSchemaVersion)
    throw ConfigError(path + ": schema_version " + j.at("schema_version").dump() + ", expected " +
                      std::to_string(kSchemaVersion));
  if (!j.contains("winners") || !j.at("winners").is_array()) throw ConfigError(path + ": expected an array 'winners'");
  int index = 0;
  for (const nlohmann::json& e : j.at("winners")) {
    const std::string where = path + ": winners[" + std::to_string(index++) + "]";
    Winner w;
    w.key.kernel = field<std::string>(e, "kernel", where);
    w.key.shape = field<std::string>(e, "shape", where);
    w.key.gpu = field<std::string>(e, "gpu", where);
    w.key.compute_capability = field<std::string>(e, "compute_capability", where);
    w.key.driver_version = field<int>(e, "driver_version", where);
    w.key.source_hash = field<std::string>(e, "source_hash", where);
    if (!e.contains("params")) throw ConfigError(where + ": missing key 'params'");
    w.params = parameters_from_json(e.at("params"), where + ".params");
    w.time_us = field<double>(e, "time_us", where);
    w.default_us = field<double>(e, "default_us", where);
    w.floor_us = field<double>(e, "floor_us", where);
    w.workload = e.value("workload", "");
    w.kernel_header = e.value("kernel_header", "");
    store.winners_.push_back(std::move(w));
  }
  return store;
}

void WinnersStore::save(const std::string& path) const {
  nlohmann::json list = nlohmann::json::array();
  for (const Winner& w : winners_) {
    nlohmann::json e = key_json(w.key);
    e["params"] = to_json(w.params);
    e["time_us"] = w.time_us;
    e["default_us"] = w.default_us;
    e["floor_us"] = w.floor_us;
    e["workload"] = w.workload;
    if (!w.kernel_header.empty()) e["kernel_header"] = w.kernel_header;
    list.push_back(std::move(e));
  }
  const nlohmann::json j = {{"schema_version", kSchemaVersion}, {"winners", list}};
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::trunc);
    f << j.dump(2) << '\n';
    f.flush();
    if (!f) throw IoError("tune: cannot write " + tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) throw IoError("tune: cannot rename " + tmp + " to " + path);
}

std::optional<Winner> WinnersStore::find(const WinnerKey& key) const {
  for (const Winner& w : winners_)
    if (w.key == key) return w;
  return std::nullopt;
}

std::vector<Winner> WinnersStore::stale(const WinnerKey& key) const {
  std::vector<Winner> out;
  for (const Winner& w : winners_)
    if (w.key.kernel == key.kernel && w.key.shape == key.shape && !(w.key == key)) out.push_back(w);
  return out;
}

bool WinnersStore::offer(const Winner& w) {
  for (Winner& existing : winners_)
    if (existing.key == w.key) {
      if (w.time_us >= existing.time_us) return false;
      existing = w;
      return true;
    }
  winners_.push_back(w);
  return true;
}

}  // namespace hetrec::tune
