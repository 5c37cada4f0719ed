// Pipeline point-to-point transfers: a send and its recv (same tag, peer stage, same replica) move
// their data once both are posted. Every TP rank sends its own shard on its own pipeline
// communicator (one NCCL send/recv per rank, each on its own queue pair and congestion control), so
// a transfer is one fabric flow per TP rank, each sharing the fabric on its own: a rank whose path
// collides slows only its shard. Both tasks end when the last shard arrives (the stage's next op is
// a TP collective or a GEMM on all of its shards).
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
  FlowSpec& spec = transfer_spec_;  // reused: its lane keeps its memory
  const StageInfo& info = stages_[static_cast<std::size_t>(from.stage)];
  spec.bytes_per_lane = info.bytes[static_cast<std::size_t>(send_task)];
  const Transfer started{send_unit, send_task, recv_unit, recv_task, static_cast<std::int32_t>(from.gpus.size()),
                         sim_.now()};
  std::int32_t transfer = 0;
  if (free_transfers_.empty()) {
    transfer = static_cast<std::int32_t>(transfers_.size());
    transfers_.push_back(started);
  } else {
    transfer = free_transfers_.back();
    free_transfers_.pop_back();
    transfers_[static_cast<std::size_t>(transfer)] = started;
  }
  spec.on_sent = [this, transfer](FlowId, sim::SimTime delivered) { on_transfer_sent(transfer, delivered); };
  const std::size_t direction = info.peer_offset[static_cast<std::size_t>(send_task)] > 0 ? 0 : 1;
  for (std::size_t t = 0; t < from.gpus.size(); ++t) {
    // One NCCL communicator per pipeline group (replica, TP rank): its connection, and so its ECMP
    // path, is the same for every transfer of the iteration.
    const std::uint64_t communicator = pipeline_communicator(from.replica, static_cast<std::int64_t>(t));
    spec.lanes.assign(1, FlowLane{from.gpus[t], to.gpus[t], fabric_connection(communicator, 0)});
    spec.route_hint = &from.send_routes[direction * from.gpus.size() + t];
    const FlowId id = fabric_.start_flow(spec);
    if (!in_.record_flows) continue;
    if (transfer_of_flow_.size() <= id.index()) transfer_of_flow_.resize(id.index() + 1, -1);
    transfer_of_flow_[id.index()] = transfer;
  }
}

void Executor::on_transfer_sent(std::int32_t transfer, sim::SimTime delivered) {
  Transfer& t = transfers_[static_cast<std::size_t>(transfer)];
  MEGASIM_ASSERT(t.flows_left > 0, "a pipeline transfer ended twice");
  t.delivered = std::max(t.delivered, delivered);
  if (--t.flows_left > 0) return;
  const auto finish = [this, transfer] {
    const Transfer done = transfers_[static_cast<std::size_t>(transfer)];
    // The flow records name their transfers (fill_flows): kept when recording them.
    if (!in_.record_flows) free_transfers_.push_back(transfer);
    finish_task(done.send_unit, done.send_task);
    finish_task(done.recv_unit, done.recv_task);
  };
  if (t.delivered > sim_.now()) {
    sim_.schedule_at(t.delivered, finish);
  } else {
    finish();
  }
}

}  // namespace megasim::backend::detail
