// The compact records the streaming trace reader (trace_events.h) decodes a trace's events into,
// and their store by pid (the rank a Perfetto process stands for), until trace_file.h knows from
// the "megasim" object, which comes after the events, which ranks' events it needs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "sim/time.h"

namespace megasim::scenarios {

// What trace_file.h needs of one event, times rounded to ns from the trace's microseconds.
struct TraceEvent {
  sim::SimTime transfer_start = 0;  // ts
  sim::SimTime end = 0;             // ts + dur
  sim::SimTime tp_exposed = 0;      // args.tp_exposed_us, when has_tp_exposed
  sim::SimTime posted = 0;          // args.posted_us, when has_posted
  std::int64_t task = 0;            // args.task: the task's index in its stage program
  bool has_tp_exposed = false;
  bool has_posted = false;

  friend bool operator==(const TraceEvent&, const TraceEvent&) = default;
};

// The counted events of each pid (the tp stream left out), in file order. A pid's consecutive events form a
// run; a run equal to the run before it is stored once, so the ranks of a tensor-parallel group
// (whose events the simulator writes alike, one rank after another) cost the memory of one rank.
class EventsByPid {
 public:
  void add(std::int64_t pid, const TraceEvent& event);
  // Seals the last run and indexes the runs by pid; call once, after the last add.
  void finish();
  // The runs of `pid`, in file order (empty when it has no events); after finish().
  [[nodiscard]] std::vector<const std::vector<TraceEvent>*> events_of(std::int64_t pid) const;
  // Events stored (after sharing equal runs) and events added, for tests and measurements.
  [[nodiscard]] std::size_t stored() const;
  [[nodiscard]] std::size_t added() const { return added_; }

 private:
  struct Run {
    std::int64_t pid = 0;
    std::size_t block = 0;  // index in blocks_
  };
  void seal();

  std::vector<std::vector<TraceEvent>> blocks_;  // exactly sized
  std::vector<Run> runs_;                        // in file order, then (after finish) sorted by pid
  std::vector<TraceEvent> open_;                 // the run being read
  std::int64_t open_pid_ = 0;
  std::size_t added_ = 0;
};

}  // namespace megasim::scenarios
