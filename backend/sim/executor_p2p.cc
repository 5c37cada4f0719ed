// Pipeline point-to-point transfers: a send and its recv (same tag, peer stage, same replica) move
// their data once both are posted, as one fabric flow whose lanes join the GPUs of equal TP rank
// (every TP rank sends its own shard). Both tasks end when the last byte arrives.
#include "backend/sim/executor_impl.h"
#include "sim/error.h"

namespace megasim::backend::detail {

void Executor::post(std::int32_t u, std::int32_t task) {
  const Unit& unit = units_[static_cast<std::size_t>(u)];
  const StageInfo& info = stages_[static_cast<std::size_t>(unit.stage)];
  const auto index = static_cast<std::size_t>(task);
  const std::int64_t peer_stage = ((unit.stage + info.peer_offset[index]) % pp_ + pp_) % pp_;
  const std::int32_t peer = unit_of(peer_stage, unit.replica);
  const std::int32_t peer_task = info.peer_task[index];
  // The peer's task is either not posted yet (it will start the transfer when it posts) or posted
  // and waiting for this one: a transfer needs both, so it cannot have begun without us.
  if (units_[static_cast<std::size_t>(peer)].tasks[static_cast<std::size_t>(peer_task)].status !=
      TaskStatus::kStarted) {
    return;
  }
  if (info.kind[index] == models::TaskKind::kPpSend) {
    start_transfer(u, task, peer, peer_task);
  } else {
    start_transfer(peer, peer_task, u, task);
  }
}

void Executor::start_transfer(std::int32_t send_unit, std::int32_t send_task, std::int32_t recv_unit,
                              std::int32_t recv_task) {
  Unit& from = units_[static_cast<std::size_t>(send_unit)];
  const Unit& to = units_[static_cast<std::size_t>(recv_unit)];
  record(send_unit, send_task).transfer_start = sim_.now();
  record(recv_unit, recv_task).transfer_start = sim_.now();
  FlowSpec& spec = transfer_spec_;  // reused: its lanes keep their memory, its callback is set once
  spec.lanes.clear();
  for (std::size_t t = 0; t < from.gpus.size(); ++t) {
    // One NCCL communicator per pipeline group (replica, TP rank): its connections, and so its ECMP
    // paths, are the same for every transfer of the iteration.
    const std::uint64_t communicator = pipeline_communicator(from.replica, static_cast<std::int64_t>(t));
    spec.lanes.push_back(FlowLane{from.gpus[t], to.gpus[t], fabric_connection(communicator, 0)});
  }
  const StageInfo& info = stages_[static_cast<std::size_t>(from.stage)];
  spec.bytes_per_lane = info.bytes[static_cast<std::size_t>(send_task)];
  spec.route_hint = &from.send_routes[info.peer_offset[static_cast<std::size_t>(send_task)] > 0 ? 0 : 1];
  const FlowId id = fabric_.start_flow(spec);
  if (transfers_.size() <= id.index()) transfers_.resize(id.index() + 1);
  transfers_[id.index()] = Transfer{send_unit, send_task, recv_unit, recv_task};
}

void Executor::on_transfer_done(FlowId id) {
  MEGASIM_ASSERT(id.index() < transfers_.size() && transfers_[id.index()].send_unit >= 0,
                 "a pipeline transfer ended that was never started");
  const Transfer t = transfers_[id.index()];
  finish_task(t.send_unit, t.send_task);
  finish_task(t.recv_unit, t.recv_task);
}

}  // namespace megasim::backend::detail
