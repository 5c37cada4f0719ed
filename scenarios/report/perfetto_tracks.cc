#include "scenarios/report/perfetto_tracks.h"

#include <algorithm>
#include <array>
#include <numeric>
#include <tuple>

namespace megasim::scenarios {

EventSpan event_span(const models::Task& task, const backend::TaskRecord& record) {
  const sim::SimTime begin = task.kind == models::TaskKind::kCompute ? record.start : record.transfer_start;
  return {begin, std::max(begin, record.end)};
}

UnitTracks unit_tracks(const models::StageProgram& program, const backend::TraceUnit& unit) {
  const std::size_t n = program.tasks.size();
  std::vector<EventSpan> spans(n);
  for (std::size_t i = 0; i < n; ++i) spans[i] = event_span(program.tasks[i], unit.records[i]);
  // Tasks by start (then end, then program order: deterministic).
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return std::tie(spans[a].begin, spans[a].end, a) < std::tie(spans[b].begin, spans[b].end, b);
  });
  std::array<std::vector<sim::SimTime>, kStreams> lane_ends;  // per stream: when each lane is free
  UnitTracks tracks;
  tracks.tid.assign(n, 0);
  for (const std::size_t i : order) {
    const auto stream = static_cast<std::size_t>(program.tasks[i].stream);
    std::vector<sim::SimTime>& ends = lane_ends.at(stream);
    std::size_t lane = 0;
    while (lane < ends.size() && ends[lane] > spans[i].begin) ++lane;
    if (lane == ends.size()) ends.push_back(0);
    ends[lane] = spans[i].end;
    tracks.tid[i] = static_cast<int>(stream) + kStreams * static_cast<int>(lane);
  }
  auto& tp_lanes = lane_ends[static_cast<std::size_t>(models::StreamKind::kTp)];
  tp_lanes.resize(lane_ends[static_cast<std::size_t>(models::StreamKind::kCompute)].size());
  for (std::size_t s = 0; s < kStreams; ++s) {
    const std::string name(models::to_string(static_cast<models::StreamKind>(s)));
    const std::size_t lanes = std::max<std::size_t>(1, lane_ends[s].size());
    for (std::size_t lane = 0; lane < lanes; ++lane) {
      tracks.threads.emplace_back(static_cast<int>(s + kStreams * lane),
                                  lane == 0 ? name : name + " " + std::to_string(lane + 1));
    }
  }
  std::sort(tracks.threads.begin(), tracks.threads.end());
  return tracks;
}

models::StreamKind stream_of_tid(std::int64_t tid) {
  return static_cast<models::StreamKind>(((tid % kStreams) + kStreams) % kStreams);
}

}  // namespace megasim::scenarios
