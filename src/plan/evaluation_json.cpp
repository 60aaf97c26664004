#include "plan/evaluation_json.h"

#include <string>

namespace hetrec::inline plan {

nlohmann::json evaluation_to_json(const RecipeEvaluation& e, const ModelConfig& model, double headroom) {
  using nlohmann::json;
  const Recipe& r = e.recipe;
  json host_tables = json::array();
  for (std::size_t t = 0; t < r.placement.size() && t < model.tables.size(); ++t)
    if (r.placement[t] == TablePlacement::host) host_tables.push_back(model.tables[t].name);
  json phases = json::object();
  for (StepPhase p : kAllStepPhases) phases[std::string(step_phase_name(p))] = e.step.phase(p);
  const auto consumers_of = [](const MemoryEstimate& m) {
    json consumers = json::array();
    for (const MemoryConsumer& c : m.consumers)
      consumers.push_back({{"name", c.name},
                           {"space", c.space == MemorySpace::device ? "device" : "host"},
                           {"bytes", c.bytes}});
    return consumers;
  };
  json consumers = consumers_of(e.memory);
  json sharding = json::object();
  for (std::size_t t = 0; t < r.sharding.size() && t < model.tables.size(); ++t) {
    json table = {{"type", dist::sharding_type_name(r.sharding[t].type)}};
    if (r.sharding[t].type == dist::ShardingType::table_wise) table["rank"] = r.sharding[t].owner;
    sharding[model.tables[t].name] = table;
  }
  json ranks = json::array();
  for (std::size_t k = 0; k < e.rank_memory.size(); ++k) {
    const MemoryEstimate& m = e.rank_memory[k];
    ranks.push_back({{"rank", m.rank},
                     {"step_ms", k < e.step.rank_step_ms.size() ? json(e.step.rank_step_ms[k]) : json(nullptr)},
                     {"device_bytes", m.device_bytes()},
                     {"host_bytes", m.host_bytes()},
                     {"fits", m.fits_usable(headroom)},
                     {"memory_consumers", consumers_of(m)}});
  }
  return json{{"hardware", r.hardware},
              {"recipe",
               {{"batch_size", r.batch},
                {"dense", std::string(dense_precision_name(r.dense))},
                {"row_dtype", std::string(dtype_name(r.row_dtype))},
                {"cross_residual", std::string(cross_residual_name(r.cross_residual_16bit))},
                {"unaligned_gemms", r.unaligned_tf32 ? "tf32" : "fp32"},
                {"host_tables", host_tables},
                {"gpus", r.gpus},
                {"sharding", sharding},
                {"description", describe_recipe(r, model)}}},
              {"ranks", ranks},
              {"fits", e.fits},
              {"headroom", headroom},
              {"refusal", e.refusal},
              {"note", e.note},
              {"predicted",
               {{"step_ms", e.step.step_ms},
                {"samples_per_s", e.step.samples_per_s},
                {"phase_ms", phases},
                {"slowest_rank", e.step.slowest_rank},
                {"device_bytes", e.memory.device_bytes()},
                {"host_bytes", e.memory.host_bytes()},
                {"usable_device_bytes", e.memory.usable_bytes},
                {"memory_consumers", consumers}}}};
}

}  // namespace hetrec::plan::plan
