#include "backend/cpu/cpu_executor.h"

#include "backend/cpu/mpi_collectives.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <map>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "models/parallel_groups.h"
#include "sim/error.h"

namespace megasim::backend::cpu {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t kStreams = 4;

int to_int(std::size_t v) {
  return static_cast<int>(v);
}

// The tags of the workload's pipeline transfers, numbered densely in increasing order: the same
// numbering on every rank (each holds the whole workload), and small enough for any MPI_TAG_UB.
std::map<std::int64_t, int> dense_tags(const models::Workload& workload) {
  std::map<std::int64_t, int> tags;
  for (const models::StageProgram& stage : workload.stages) {
    for (const models::Task& task : stage.tasks) {
      if (task.kind == models::TaskKind::kPpSend || task.kind == models::TaskKind::kPpRecv) tags.emplace(task.tag, 0);
    }
  }
  int next = 0;
  for (auto& [tag, index] : tags) index = next++;
  return tags;
}

// The kernel lists this stage's compute tasks run (CpuKernels sizes its buffers for them alone).
std::vector<models::KernelList> lists_of(const models::Workload& workload, const models::StageProgram& program) {
  std::vector<bool> used(workload.kernels.size(), false);
  for (const models::Task& task : program.tasks) {
    for (const models::Task::KernelRun& run : task.runs) used[static_cast<std::size_t>(run.kernels)] = true;
  }
  std::vector<models::KernelList> lists;
  for (std::size_t i = 0; i < used.size(); ++i) {
    if (used[i]) lists.push_back(workload.kernels[i]);
  }
  return lists;
}

}  // namespace

struct CpuRankExecutor::Impl {
  Impl(const models::Workload& w, int world_rank, std::chrono::milliseconds stall_timeout);
  ~Impl();

  std::vector<TaskRecord> run_iteration();
  [[nodiscard]] sim::SimTime now() const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count();
  }
  [[nodiscard]] bool ready(std::size_t task) const { return waiting_deps[task] == 0; }
  void finish(std::size_t task);
  void run_compute(std::size_t task);
  void run_tp_collective(const models::TpCollective& call);
  void post_p2p(std::size_t task);
  void issue_dp(std::size_t task);
  void track(MPI_Request request, std::size_t task);
  // Tests the outstanding requests and finishes the tasks whose requests completed; returns whether any did.
  bool poll();
  void wait_for_one();
  // Waits for `request` (a collective of the tensor group or the iteration barrier) with the deadline.
  void wait_for(MPI_Request& request, const std::string& what);
  // Throws the stall's MpiError (after cancelling what can be cancelled) once no task finished for
  // the timeout.
  void check_stall(const std::string& waiting_for);
  [[nodiscard]] std::string outstanding_tasks() const;
  [[nodiscard]] std::vector<float>& buffer(std::size_t task, std::size_t floats);

  const models::Workload& workload;
  std::chrono::milliseconds timeout;
  models::ParallelLayout layout;
  int rank = 0;
  std::int64_t stage = 0;
  const models::StageProgram& program;
  mpi::RankGroups groups;
  CpuKernels kernels;
  std::map<std::int64_t, int> tags;
  std::vector<std::vector<std::int32_t>> dependents;
  std::array<std::vector<std::int32_t>, kStreams> stream_tasks;

  // Per iteration.
  Clock::time_point t0;
  std::vector<TaskRecord> records;
  std::vector<std::int32_t> waiting_deps;
  std::vector<bool> done;
  std::size_t finished = 0;
  bool dp_busy = false;
  std::vector<MPI_Request> requests;  // outstanding, parallel to request_task
  std::vector<std::size_t> request_task;
  std::vector<std::vector<float>> buffers;    // per pipeline task: its message, kept across iterations
  std::vector<CollectiveBuffers> dp_buffers;  // per DP task, kept across iterations
  CollectiveBuffers tp_buffers;
  std::vector<int> completed_indices;
  Clock::time_point last_progress;
  std::vector<MPI_Request> abandoned;  // uncancellable requests of a stalled iteration
};

CpuRankExecutor::Impl::Impl(const models::Workload& w, int world_rank, std::chrono::milliseconds stall_timeout)
    : workload(w),
      timeout(stall_timeout),
      layout{w.plan.layout()},
      rank(world_rank),
      stage(layout.pp_rank(world_rank)),
      program(w.stages.at(static_cast<std::size_t>(stage))),
      groups(layout, world_rank),
      kernels(lists_of(w, program)),
      tags(dense_tags(w)) {
  const std::size_t n = program.tasks.size();
  dependents.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const models::Task& task = program.tasks[i];
    for (const std::int32_t d : task.deps) {
      MEGASIM_ASSERT(d >= 0 && static_cast<std::size_t>(d) < i, "a task depends on a later or unknown task");
      dependents[static_cast<std::size_t>(d)].push_back(static_cast<std::int32_t>(i));
    }
    stream_tasks[static_cast<std::size_t>(task.stream)].push_back(static_cast<std::int32_t>(i));
  }
  buffers.resize(n);
  dp_buffers.resize(n);
}

CpuRankExecutor::Impl::~Impl() {
  for (MPI_Request& request : abandoned) {
    int done_flag = 0;
    MPI_Test(&request, &done_flag, MPI_STATUS_IGNORE);  // frees it when it has completed since
  }
}

std::string CpuRankExecutor::Impl::outstanding_tasks() const {
  std::string text;
  for (std::size_t i = 0; i < request_task.size() && i < 4; ++i) {
    const models::Task& t = program.tasks[request_task[i]];
    if (!text.empty()) text += ", ";
    text += "task " + std::to_string(request_task[i]) + " (" + std::string(models::to_string(t.category));
    if (t.microbatch >= 0) text += ", micro-batch " + std::to_string(t.microbatch);
    text += ")";
  }
  if (request_task.size() > 4) text += " and " + std::to_string(request_task.size() - 4) + " more";
  return text;
}

void CpuRankExecutor::Impl::check_stall(const std::string& waiting_for) {
  const auto idle = Clock::now() - last_progress;
  if (idle < timeout) return;
  // Cancel what MPI can cancel (point-to-point); keep collectives' requests, which cannot be.
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const models::TaskKind kind = program.tasks[request_task[i]].kind;
    if (kind == models::TaskKind::kPpSend || kind == models::TaskKind::kPpRecv) {
      MPI_Cancel(&requests[i]);
      MPI_Request_free(&requests[i]);
    } else {
      abandoned.push_back(requests[i]);
    }
  }
  requests.clear();
  request_task.clear();
  throw mpi::MpiError(fmt::format("rank {}: no progress for {:.3g} s; still waiting for {}", rank,
                                  std::chrono::duration<double>(timeout).count(), waiting_for));
}

void CpuRankExecutor::Impl::wait_for(MPI_Request& request, const std::string& what) {
  while (true) {
    int flag = 0;
    mpi::check_mpi(MPI_Test(&request, &flag, MPI_STATUS_IGNORE), "MPI_Test (" + what + ")");
    if (flag != 0) return;
    try {
      check_stall(what);
    } catch (...) {
      abandoned.push_back(request);
      throw;
    }
    std::this_thread::yield();
  }
}

std::vector<float>& CpuRankExecutor::Impl::buffer(std::size_t task, std::size_t floats) {
  std::vector<float>& b = buffers[task];
  if (b.size() < floats) b.assign(floats, 1.0f);
  return b;
}

void CpuRankExecutor::Impl::finish(std::size_t task) {
  MEGASIM_ASSERT(!done[task], "a task finished twice");
  done[task] = true;
  records[task].end = now();
  ++finished;
  last_progress = Clock::now();
  for (const std::int32_t d : dependents[task]) --waiting_deps[static_cast<std::size_t>(d)];
  if (program.tasks[task].kind == models::TaskKind::kDpCollective) dp_busy = false;
}

void CpuRankExecutor::Impl::track(MPI_Request request, std::size_t task) {
  requests.push_back(request);
  request_task.push_back(task);
}

bool CpuRankExecutor::Impl::poll() {
  if (requests.empty()) return false;
  completed_indices.resize(requests.size());
  int count = 0;
  mpi::check_mpi(
      MPI_Testsome(to_int(requests.size()), requests.data(), &count, completed_indices.data(), MPI_STATUSES_IGNORE),
      "MPI_Testsome");
  if (count == MPI_UNDEFINED || count == 0) return false;
  for (int i = 0; i < count; ++i)
    finish(request_task[static_cast<std::size_t>(completed_indices[static_cast<std::size_t>(i)])]);
  // Completed requests are MPI_REQUEST_NULL now: drop them, keeping the others in order.
  std::size_t kept = 0;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    if (requests[i] == MPI_REQUEST_NULL) continue;
    requests[kept] = requests[i];
    request_task[kept] = request_task[i];
    ++kept;
  }
  requests.resize(kept);
  request_task.resize(kept);
  return true;
}

void CpuRankExecutor::Impl::wait_for_one() {
  MEGASIM_ASSERT(!requests.empty(), "the rank's program is stuck: no task can run and no transfer is pending");
  while (true) {
    int index = MPI_UNDEFINED;
    int flag = 0;
    mpi::check_mpi(MPI_Testany(to_int(requests.size()), requests.data(), &index, &flag, MPI_STATUS_IGNORE),
                   "MPI_Testany");
    if (flag != 0 && index != MPI_UNDEFINED) {
      const auto i = static_cast<std::size_t>(index);
      finish(request_task[i]);
      requests.erase(requests.begin() + index);
      request_task.erase(request_task.begin() + index);
      return;
    }
    check_stall(outstanding_tasks());
    std::this_thread::yield();
  }
}

void CpuRankExecutor::Impl::run_tp_collective(const models::TpCollective& call) {
  MEGASIM_ASSERT(call.op != models::CollectiveOp::kSendRecv, "a tensor-parallel send/recv");
  MPI_Request request = start_collective(call.op, call.bytes, groups.tensor(), tp_buffers, "tensor group");
  wait_for(request, "a tensor-group " + std::string(models::to_string(call.op)));
}

void CpuRankExecutor::Impl::run_compute(std::size_t task) {
  const models::Task& t = program.tasks[task];
  TaskRecord& record = records[task];
  record.start = record.transfer_start = now();
  const bool flash = models::uses_flash_kernel(workload.plan.plan);
  for (const models::Task::KernelRun& run : t.runs) {
    const models::KernelList& list = workload.kernels[static_cast<std::size_t>(run.kernels)];
    for (std::int32_t r = 0; r < run.repeat; ++r) {
      for (const models::LayerOp& op : list.ops) {
        kernels.run(op, flash);
        poll();
      }
      if (layout.tensor == 1) continue;  // Megatron skips collectives over a group of one
      const sim::SimTime tp_start = now();
      for (const models::TpCollective& call : list.tp_collectives) {
        for (std::int32_t c = 0; c < call.count; ++c) run_tp_collective(call);
      }
      record.tp_exposed += now() - tp_start;
    }
  }
  finish(task);
}

void CpuRankExecutor::Impl::post_p2p(std::size_t task) {
  const models::Task& t = program.tasks[task];
  const std::int64_t pp = layout.pipeline;
  const int peer = static_cast<int>(((stage + t.peer_offset) % pp + pp) % pp);
  const int tag = tags.at(t.tag);
  const std::size_t n = floats_of(t.bytes);
  std::vector<float>& data = buffer(task, n);
  records[task].start = records[task].transfer_start = now();
  MPI_Request request = MPI_REQUEST_NULL;
  if (t.kind == models::TaskKind::kPpSend) {
    mpi::check_mpi(MPI_Isend(data.data(), to_int(n), MPI_FLOAT, peer, tag, groups.pipeline(), &request),
                   "MPI_Isend (pipeline)");
  } else {
    mpi::check_mpi(MPI_Irecv(data.data(), to_int(n), MPI_FLOAT, peer, tag, groups.pipeline(), &request),
                   "MPI_Irecv (pipeline)");
  }
  track(request, task);
}

void CpuRankExecutor::Impl::issue_dp(std::size_t task) {
  const models::Task& t = program.tasks[task];
  MEGASIM_ASSERT(t.op != models::CollectiveOp::kSendRecv, "a data-parallel send/recv");
  records[task].start = records[task].transfer_start = now();
  dp_busy = true;
  if (layout.data == 1) {  // a group of one has nothing to exchange (the simulator charges it no transfer)
    finish(task);
    return;
  }
  track(start_collective(t.op, t.bytes, groups.data(), dp_buffers[task], "data group"), task);
}

std::vector<TaskRecord> CpuRankExecutor::Impl::run_iteration() {
  const std::size_t n = program.tasks.size();
  records.assign(n, TaskRecord{});
  waiting_deps.resize(n);
  for (std::size_t i = 0; i < n; ++i) waiting_deps[i] = static_cast<std::int32_t>(program.tasks[i].deps.size());
  done.assign(n, false);
  finished = 0;
  dp_busy = false;
  std::array<std::size_t, kStreams> next{};
  const auto& compute = stream_tasks[static_cast<std::size_t>(models::StreamKind::kCompute)];
  const auto& tp = stream_tasks[static_cast<std::size_t>(models::StreamKind::kTp)];
  const auto& pp = stream_tasks[static_cast<std::size_t>(models::StreamKind::kPp)];
  const auto& dp = stream_tasks[static_cast<std::size_t>(models::StreamKind::kDp)];
  MEGASIM_ASSERT(tp.empty(), "a task on the tensor-parallel stream (TP collectives belong to compute tasks)");
  std::size_t& next_compute = next[static_cast<std::size_t>(models::StreamKind::kCompute)];
  std::size_t& next_pp = next[static_cast<std::size_t>(models::StreamKind::kPp)];
  std::size_t& next_dp = next[static_cast<std::size_t>(models::StreamKind::kDp)];

  last_progress = Clock::now();
  MPI_Request barrier = MPI_REQUEST_NULL;
  mpi::check_mpi(MPI_Ibarrier(MPI_COMM_WORLD, &barrier), "MPI_Ibarrier (iteration start)");
  wait_for(barrier, "the iteration barrier (a peer has not arrived)");
  t0 = Clock::now();
  last_progress = t0;
  while (finished < n) {
    bool moved = false;
    while (next_pp < pp.size() && ready(static_cast<std::size_t>(pp[next_pp]))) {
      const auto task = static_cast<std::size_t>(pp[next_pp++]);
      MEGASIM_ASSERT(program.tasks[task].kind != models::TaskKind::kCompute, "a compute task on the pipeline stream");
      post_p2p(task);
      moved = true;
    }
    if (!dp_busy && next_dp < dp.size() && ready(static_cast<std::size_t>(dp[next_dp]))) {
      issue_dp(static_cast<std::size_t>(dp[next_dp++]));
      moved = true;
    }
    moved = poll() || moved;
    if (next_compute < compute.size() && ready(static_cast<std::size_t>(compute[next_compute]))) {
      run_compute(static_cast<std::size_t>(compute[next_compute++]));
      moved = true;
    }
    if (!moved) wait_for_one();
  }
  return records;
}

CpuRankExecutor::CpuRankExecutor(const models::Workload& workload, int world_rank, std::chrono::milliseconds timeout)
    : impl_(std::make_unique<Impl>(workload, world_rank, timeout)),
      stage_(impl_->stage),
      replica_(impl_->layout.dp_rank(world_rank)) {}

CpuRankExecutor::~CpuRankExecutor() = default;

std::vector<TaskRecord> CpuRankExecutor::run_iteration() {
  return impl_->run_iteration();
}

}  // namespace megasim::backend::cpu
