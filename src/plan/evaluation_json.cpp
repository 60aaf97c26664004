#include "plan/evaluation_json.h"

#include <string>

namespace hetrec {

nlohmann::json evaluation_to_json(const RecipeEvaluation& e, const ModelConfig& model, double headroom) {
  using nlohmann::json;
  const Recipe& r = e.recipe;
  json host_tables = json::array();
  for (std::size_t t = 0; t < r.placement.size() && t < model.tables.size(); ++t)
    if (r.placement[t] == TablePlacement::host) host_tables.push_back(model.tables[t].name);
  json phases = json::object();
  for (StepPhase p : kAllStepPhases) phases[std::string(step_phase_name(p))] = e.step.phase(p);
  json consumers = json::array();
  for (const MemoryConsumer& c : e.memory.consumers)
    consumers.push_back({{"name", c.name},
                         {"space", c.space == MemorySpace::device ? "device" : "host"},
                         {"bytes", c.bytes}});
  return json{{"hardware", r.hardware},
              {"recipe",
               {{"batch_size", r.batch},
                {"dense", std::string(dense_precision_name(r.dense))},
                {"row_dtype", std::string(dtype_name(r.row_dtype))},
                {"host_tables", host_tables},
                {"description", describe_recipe(r, model)}}},
              {"fits", e.fits},
              {"headroom", headroom},
              {"refusal", e.refusal},
              {"note", e.note},
              {"predicted",
               {{"step_ms", e.step.step_ms},
                {"samples_per_s", e.step.samples_per_s},
                {"phase_ms", phases},
                {"device_bytes", e.memory.device_bytes()},
                {"host_bytes", e.memory.host_bytes()},
                {"usable_device_bytes", e.memory.usable_bytes},
                {"memory_consumers", consumers}}}};
}

}  // namespace hetrec
