#include "scenarios/report/provenance.h"

#include "scenarios/report/build_info.h"

namespace megasim::scenarios {
namespace {

void path_or_null(JsonWriter& w, std::string_view key, const std::string& path) {
  w.key(key);
  if (path.empty()) {
    w.null();
  } else {
    w.value(path);
  }
}

}  // namespace

Provenance provenance_of(const Scenario& s, std::string_view backend) {
  return Provenance{s.source_file,
                    s.name,
                    s.seed,
                    std::string(backend),
                    s.calibration_file,
                    std::string(megasim_version()),
                    std::string(megasim_commit())};
}

void write_provenance_json(JsonWriter& w, const Provenance& p) {
  w.begin_object();
  path_or_null(w, "scenario_file", p.scenario_file);
  w.field("scenario_name", p.scenario_name).field("seed", p.seed).field("backend", p.backend);
  path_or_null(w, "calibration_file", p.calibration_file);
  w.field("megasim_version", p.megasim_version).field("megasim_commit", p.megasim_commit);
  w.end_object();
}

}  // namespace megasim::scenarios
