// Chrome trace JSON of one iteration, for Perfetto (ui.perfetto.dev) or chrome://tracing:
//   {"traceEvents":[...],"displayTimeUnit":"ns"}
// One process per rank (pid = global rank, named "rank N (stage s, replica d, tp t)"), one thread
// per stream (tid 0 compute, 1 tp, 2 pp, 3 dp, named by "M" metadata events) and more where a
// stream's tasks overlap (tid = stream + 4 x lane, "pp 2", ...: perfetto_tracks.h), so that slices
// on one thread never partially overlap; and a complete event ("ph":"X", ts and dur in
// microseconds as doubles) per task:
//  - compute tasks on the compute stream, [start, end), named by task_name() ("F mb3 c1",
//    "optimizer", ...);
//  - for a compute task whose kernels include TP collectives, an event on the tp stream spanning
//    the same task ("tp F mb3 c1"; args: calls, exposed_us): the trace records only how much TP time
//    was exposed, not where inside the task each call ran;
//  - PP sends/recvs on the pp stream and DP collectives on the dp stream, spanning the transfer
//    [transfer_start, end); args.posted_us says when the task was posted or issued;
//  - a flow arrow from each PP send to its recv when both ranks are written (perfetto_flows.h).
// Every event's args hold stage, microbatch and chunk (-1 when not tied to one) and, last, task (its
// index in the stage program). Ranks of one TraceUnit get identical events. After the events, a
// top-level "megasim" object holds what trace_file.h needs to read the trace back: version (1),
// backend, iteration_time_ns, scenario (every key of keys.h as "section.key": value,
// embedded_scenario.h; only when a scenario is given) and units [{ranks, stage, replica}] (the
// written ranks of each unit). Output is deterministic: ranks ascending, each rank's metadata then
// its tasks in program order.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "backend/trace.h"
#include "models/workload.h"
#include "scenarios/config/scenario.h"

namespace megasim::scenarios {

struct TraceFilter {
  std::vector<std::int64_t> ranks;  // exactly these ranks (each written, however many); empty = all
  // Without a list of ranks, at most this many, so a 12,288-GPU trace stays small; 0 = no limit. The
  // limit keeps whole pipelines: the selection ordered by (TP rank, DP replica, stage), i.e. TP rank
  // 0 of every stage of replica 0, then of replica 1, and so on.
  std::int64_t max_ranks = 64;
};

// The ranks a filter selects from the trace, ascending. Throws sim::ConfigError with key
// "trace.max_ranks" when max_ranks < 0 and "trace.ranks" for a rank outside [0, world_size), a rank
// listed twice, or a listed rank the trace does not hold (a partial real-backend trace). Without a
// list, the ranks the trace holds are selected.
std::vector<std::int64_t> selected_ranks(const models::Workload& workload, const backend::Trace& trace,
                                         const TraceFilter& filter);

// The selected ranks (as selected_ranks) grouped by the trace unit that holds them: units
// ascending by index in trace.units, each with its selected ranks ascending. What the "megasim"
// object's units list, and the units trace.bin holds (binary_trace.h). Throws as selected_ranks.
struct WrittenUnit {
  std::size_t unit = 0;             // index in trace.units
  std::vector<std::int64_t> ranks;  // its selected ranks (at least one)
};
std::vector<WrittenUnit> written_units(const models::Workload& workload, const backend::Trace& trace,
                                       const TraceFilter& filter);

// Streams the trace; throws as selected_ranks, before writing anything. `scenario`: the scenario
// the workload was built from (embedded so the trace can be analysed later: megasim whatif), or
// nullptr.
void write_perfetto_trace(std::ostream& out, const models::Workload& workload, const backend::Trace& trace,
                          const TraceFilter& filter = {}, const Scenario* scenario = nullptr);

std::string perfetto_trace_json(const models::Workload& workload, const backend::Trace& trace,
                                const TraceFilter& filter = {}, const Scenario* scenario = nullptr);

}  // namespace megasim::scenarios
