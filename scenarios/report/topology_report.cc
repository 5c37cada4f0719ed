#include "scenarios/report/topology_report.h"

#include <fmt/format.h>

#include "scenarios/config/json_writer.h"
#include "scenarios/config/plural.h"

namespace megasim::scenarios {

std::string to_text(const topo::TopologySummary& s) {
  std::string out =
      fmt::format("{}-tier Clos{}: {} in {}, {}, {}\n", s.tiers,
                  s.rail_planes > 0 ? fmt::format(" of {} rail planes (a leaf-spine each)", s.rail_planes) : "",
                  counted(s.gpus, "GPU"), counted(s.servers, "server"), counted(s.groups, "rail-ToR group"),
                  counted(s.pods, "pod"));
  out += fmt::format("switches: {} NVSwitch, {} ToR, {} aggregation, {} core\n", s.nvswitches, s.tors, s.aggs, s.cores);
  out += fmt::format("{:<10} {:>10} {:>12} {:>16}\n", "tier", "cables", "Gb/s each", "upward Tb/s");
  for (const topo::TierSummary& t : s.link_tiers) {
    out += fmt::format("{:<10} {:>10} {:>12g} {:>16.1f}\n", t.name, t.cables, t.gbps_each_way, t.total_tbps_up);
  }
  out += s.tiers == 3 ? fmt::format("oversubscription: ToR {:g}:1, aggregation {:g}:1\n", s.tor_oversubscription,
                                    s.agg_oversubscription)
                      : fmt::format("oversubscription: ToR {:g}:1 (the aggregation switches are the top tier)\n",
                                    s.tor_oversubscription);
  out += fmt::format("bisection bandwidth: {:.1f} Tb/s each way ({:.2f} of full bisection)\n", s.bisection_tbps,
                     s.bisection_ratio);
  return out;
}

std::string to_json(const topo::TopologySummary& s) {
  JsonWriter w;
  w.begin_object();
  w.field("tiers", s.tiers).field("gpus", s.gpus).field("servers", s.servers).field("groups", s.groups);
  w.field("pods", s.pods);
  if (s.rail_planes > 0) w.field("rail_planes", s.rail_planes);
  w.key("switches").begin_object();
  w.field("nvswitch", s.nvswitches).field("tor", s.tors).field("agg", s.aggs).field("core", s.cores);
  w.end_object();
  w.key("link_tiers").begin_array();
  for (const topo::TierSummary& t : s.link_tiers) {
    w.begin_object().field("name", t.name).field("cables", t.cables).field("gbps_each_way", t.gbps_each_way);
    w.field("total_tbps_up", t.total_tbps_up).end_object();
  }
  w.end_array();
  w.field("tor_oversubscription", s.tor_oversubscription).field("agg_oversubscription", s.agg_oversubscription);
  w.field("bisection_tbps", s.bisection_tbps).field("bisection_ratio", s.bisection_ratio);
  w.end_object();
  return w.str() + "\n";
}

}  // namespace megasim::scenarios
