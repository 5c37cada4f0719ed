// The threads (Perfetto tracks) of a trace unit's events. Perfetto draws the slices of one thread
// as a stack, so they must nest; the tasks of one stream can overlap (a PP send and a PP recv in
// flight at once, sends posted ahead of their recvs), so each stream is split into lanes by greedy
// interval partitioning: slices in order of their start, each to the lowest lane that is free at
// its start ([begin, end) intervals: a lane is free once its last slice ended). That uses as few
// lanes as the most slices of the stream in flight at once, and slices in one lane never overlap.
//
// Thread ids: tid = stream + kStreams * lane (stream: models::StreamKind, 0 compute, 1 tp, 2 pp,
// 3 dp), so lane 0 keeps the ids 0-3 and a reader gets the stream back as tid % kStreams. Lane 0 is
// named after the stream ("pp"), lane k > 0 "pp k+1". A compute task's tp event lies in the tp lane
// of the task's compute lane (it spans the same interval).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "backend/trace.h"
#include "models/workload.h"
#include "sim/time.h"

namespace megasim::scenarios {

inline constexpr int kStreams = 4;

// The interval a task's event spans: [start, end) for compute tasks, [transfer_start, end) for
// transfers (the time before transfer_start, posted but waiting for the peer, is in args); its
// length is clamped at 0.
struct EventSpan {
  sim::SimTime begin = 0;
  sim::SimTime end = 0;
};
EventSpan event_span(const models::Task& task, const backend::TaskRecord& record);

struct UnitTracks {
  std::vector<int> tid;  // per task of the stage program: the thread of its event
  // Every thread of the unit as (tid, name), ascending by tid: each stream's lanes (at least one, so
  // every rank has the four stream threads), the tp lanes as many as the compute lanes.
  std::vector<std::pair<int, std::string>> threads;
};

UnitTracks unit_tracks(const models::StageProgram& program, const backend::TraceUnit& unit);

// The stream of a thread id (tid % kStreams).
models::StreamKind stream_of_tid(std::int64_t tid);

}  // namespace megasim::scenarios
