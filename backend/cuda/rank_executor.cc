#include "backend/cuda/rank_executor.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <utility>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_handles.h"
#include "backend/cuda/cuda_libraries.h"
#include "backend/cuda/device_memory.h"
#include "backend/cuda/nccl_check.h"
#include "backend/cuda/nccl_collectives.h"
#include "backend/cuda/op_runner.h"
#include "backend/cuda/pipeline_channels.h"
#include "backend/watchdog.h"
#include "sim/error.h"

namespace megasim::backend::cuda {
namespace {

using models::TaskKind;

// Per run of a kernel list with TP collectives: list start, overlapped calls' end (TP stream), ops'
// end, serial calls' start and end.
constexpr std::size_t kEventsPerTpRun = 5;
constexpr std::size_t kElementBytes = 2;  // bf16 pipeline messages
constexpr auto kPollInterval = std::chrono::milliseconds(20);

std::size_t message_elements(double bytes) {
  return std::max<std::size_t>(1, static_cast<std::size_t>(std::max(0.0, bytes)) / kElementBytes);
}

std::string task_text(const models::Task& t, std::size_t index) {
  std::string text = "task " + std::to_string(index) + " (" + std::string(models::to_string(t.category));
  if (t.microbatch >= 0) text += ", micro-batch " + std::to_string(t.microbatch);
  if (t.kind == TaskKind::kPpSend || t.kind == TaskKind::kPpRecv) {
    text += t.kind == TaskKind::kPpSend ? ", send" : ", receive";
  }
  return text + ")";
}

// What the rank's program needs, found before anything is allocated.
struct ProgramNeeds {
  std::vector<std::pair<std::int64_t, std::int64_t>> channels;  // (from, to) stages, in first use
  std::vector<double> channel_bytes;                            // the largest message of each
  std::vector<std::int32_t> channel_of;                         // per task: its channel, -1 if none
  std::vector<std::size_t> tp_first;                            // per task: its first TP event
  std::size_t tp_events = 0;
  std::size_t dp_input = 0;
  std::size_t dp_output = 0;
  std::size_t tp_input = 0;
  std::size_t tp_output = 0;
};

ProgramNeeds needs_of(const models::Workload& w, std::int64_t stage) {
  const models::StageProgram& program = w.stages.at(static_cast<std::size_t>(stage));
  const models::ParallelLayout layout = w.plan.layout();
  const auto tp_ranks = static_cast<int>(layout.tensor);
  const auto dp_ranks = static_cast<int>(layout.data);
  const std::size_t n = program.tasks.size();
  ProgramNeeds needs;
  needs.channel_of.assign(n, -1);
  needs.tp_first.assign(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    const models::Task& task = program.tasks[i];
    if (task.kind == TaskKind::kPpSend || task.kind == TaskKind::kPpRecv) {
      const std::int64_t pp = layout.pipeline;
      const std::int64_t peer = ((stage + task.peer_offset) % pp + pp) % pp;
      const bool send = task.kind == TaskKind::kPpSend;
      const std::pair<std::int64_t, std::int64_t> key = send ? std::pair{stage, peer} : std::pair{peer, stage};
      auto found = std::find(needs.channels.begin(), needs.channels.end(), key);
      if (found == needs.channels.end()) {
        needs.channels.push_back(key);
        needs.channel_bytes.push_back(0);
        found = needs.channels.end() - 1;
      }
      const auto c = static_cast<std::size_t>(found - needs.channels.begin());
      needs.channel_bytes[c] = std::max(needs.channel_bytes[c], task.bytes);
      needs.channel_of[i] = static_cast<std::int32_t>(c);
    } else if (task.kind == TaskKind::kDpCollective && dp_ranks > 1) {
      const CollectiveSize size = collective_size(task.op, task.bytes, dp_ranks);
      needs.dp_input = std::max(needs.dp_input, size.input_bytes);
      needs.dp_output = std::max(needs.dp_output, size.output_bytes);
    } else if (task.kind == TaskKind::kCompute) {
      needs.tp_first[i] = needs.tp_events;
      for (const models::Task::KernelRun& run : task.runs) {
        const models::KernelList& list = w.kernels.at(static_cast<std::size_t>(run.kernels));
        if (tp_ranks == 1 || list.tp_collectives.empty()) continue;
        needs.tp_events += kEventsPerTpRun * static_cast<std::size_t>(std::max(0, run.repeat));
        for (const models::TpCollective& call : list.tp_collectives) {
          const CollectiveSize size = collective_size(call.op, call.bytes, tp_ranks);
          needs.tp_input = std::max(needs.tp_input, size.input_bytes);
          needs.tp_output = std::max(needs.tp_output, size.output_bytes);
        }
      }
    }
  }
  return needs;
}

struct Channel {
  NcclComms::Channel nccl;
  std::unique_ptr<Stream> stream;
  DeviceBuffer buffer;
};

}  // namespace

struct CudaRankExecutor::Impl {
  Impl(const models::Workload& w, NcclComms& c, std::chrono::milliseconds t);

  std::vector<TaskRecord> run_iteration();
  void barrier();
  void enqueue(std::size_t task);
  void enqueue_compute(std::size_t task);
  void enqueue_tp_calls(const models::KernelList& list, bool overlappable, cudaStream_t stream,
                        const std::string& what);
  void enqueue_p2p(std::size_t task);
  void enqueue_dp(std::size_t task);
  void wait_for_iteration(Watchdog& watchdog);
  [[nodiscard]] std::string first_unfinished() const;
  [[nodiscard]] std::vector<TaskRecord> records() const;
  [[nodiscard]] std::string where(std::size_t task) const {
    return "rank " + std::to_string(rank) + ", " + task_text(program.tasks[task], task);
  }
  [[nodiscard]] cudaStream_t stream_of(std::size_t task) const;

  const models::Workload& workload;
  NcclComms& comms;
  std::chrono::milliseconds timeout;
  models::ParallelLayout layout;
  int rank = 0;
  int device = 0;
  const models::StageProgram& program;
  ProgramNeeds needs;
  std::vector<Channel> channels;  // index = needs.channels'
  OpRunner ops;
  Stream compute;
  Stream tp_stream;
  Stream dp_stream;
  DeviceBuffer dp_input;
  DeviceBuffer dp_output;
  DeviceBuffer tp_input;
  DeviceBuffer tp_output;
  DeviceBuffer barrier_buffer;
  Events base;         // [0]: the iteration's start
  Events task_events;  // a start and an end per task
  Events tp_events;
  std::atomic<std::size_t> enqueued{0};  // tasks whose end event is recorded (for the watchdog)
  std::atomic<bool> in_barrier{false};
};

CudaRankExecutor::Impl::Impl(const models::Workload& w, NcclComms& c, std::chrono::milliseconds t)
    : workload(w),
      comms(c),
      timeout(t),
      layout(w.plan.layout()),
      rank(c.rank()),
      program(w.stages.at(static_cast<std::size_t>(c.stage()))),
      needs(needs_of(w, c.stage())),
      ops(w, program),
      dp_input(needs.dp_input, "data-parallel collective input"),
      dp_output(needs.dp_output, "data-parallel collective output"),
      tp_input(needs.tp_input, "tensor-parallel collective input"),
      tp_output(needs.tp_output, "tensor-parallel collective output"),
      barrier_buffer(2 * sizeof(float), "barrier"),
      base(1),
      task_events(2 * program.tasks.size()),
      tp_events(needs.tp_events) {
  check(cudaGetDevice(&device), "cudaGetDevice");
  check_fifo_order(w);
  for (std::size_t i = 0; i < needs.channels.size(); ++i) {
    const auto [from, to] = needs.channels[i];
    Channel channel;
    channel.nccl = from == c.stage() ? c.send_channel(to) : c.recv_channel(from);
    channel.stream = std::make_unique<Stream>();
    channel.buffer = DeviceBuffer(message_elements(needs.channel_bytes[i]) * kElementBytes, "pipeline message");
    channels.push_back(std::move(channel));
  }
}

cudaStream_t CudaRankExecutor::Impl::stream_of(std::size_t task) const {
  switch (program.tasks[task].kind) {
    case TaskKind::kCompute:
      return compute.get();
    case TaskKind::kPpSend:
    case TaskKind::kPpRecv:
      return channels[static_cast<std::size_t>(needs.channel_of[task])].stream->get();
    case TaskKind::kDpCollective:
      return dp_stream.get();
  }
  return compute.get();
}

void CudaRankExecutor::Impl::barrier() {
  in_barrier.store(true);
  float* data = static_cast<float*>(barrier_buffer.get());
  check_nccl(nccl().all_reduce(data, data + 1, 1, ncclFloat32, ncclSum, comms.world(), compute.get()),
             "rank " + std::to_string(rank) + ": ncclAllReduce (iteration barrier)", comms.world());
  check(cudaStreamSynchronize(compute.get()), "cudaStreamSynchronize (iteration barrier)");
  in_barrier.store(false);
}

void CudaRankExecutor::Impl::enqueue_tp_calls(const models::KernelList& list, bool overlappable, cudaStream_t stream,
                                              const std::string& what) {
  const auto tp_ranks = static_cast<int>(layout.tensor);
  for (const models::TpCollective& call : list.tp_collectives) {
    if (call.overlappable != overlappable) continue;
    const CollectiveSize size = collective_size(call.op, call.bytes, tp_ranks);
    for (std::int32_t k = 0; k < call.count; ++k) {
      enqueue_collective(call.op, size, comms.tensor(), tp_input.get(), tp_output.get(), stream, what + ", tp");
    }
  }
}

void CudaRankExecutor::Impl::enqueue_compute(std::size_t task) {
  const models::Task& t = program.tasks[task];
  std::size_t next_tp = needs.tp_first[task];
  const std::string what = where(task);
  for (const models::Task::KernelRun& run : t.runs) {
    const models::KernelList& list = workload.kernels.at(static_cast<std::size_t>(run.kernels));
    const bool with_tp = layout.tensor > 1 && !list.tp_collectives.empty();
    const bool overlapped = with_tp && std::any_of(list.tp_collectives.begin(), list.tp_collectives.end(),
                                                   [](const models::TpCollective& c) { return c.overlappable; });
    for (std::int32_t r = 0; r < run.repeat; ++r) {
      if (!with_tp) {
        for (const models::LayerOp& op : list.ops) ops.run(op, compute.get());
        continue;
      }
      const std::size_t e = next_tp;
      next_tp += kEventsPerTpRun;
      check(cudaEventRecord(tp_events[e], compute.get()), "cudaEventRecord");
      if (overlapped) {
        check(cudaStreamWaitEvent(tp_stream.get(), tp_events[e], 0), "cudaStreamWaitEvent");
        enqueue_tp_calls(list, true, tp_stream.get(), what);
        check(cudaEventRecord(tp_events[e + 1], tp_stream.get()), "cudaEventRecord");
      }
      for (const models::LayerOp& op : list.ops) ops.run(op, compute.get());
      check(cudaEventRecord(tp_events[e + 2], compute.get()), "cudaEventRecord");
      if (overlapped) check(cudaStreamWaitEvent(compute.get(), tp_events[e + 1], 0), "cudaStreamWaitEvent");
      check(cudaEventRecord(tp_events[e + 3], compute.get()), "cudaEventRecord");
      enqueue_tp_calls(list, false, compute.get(), what);
      check(cudaEventRecord(tp_events[e + 4], compute.get()), "cudaEventRecord");
    }
  }
}

void CudaRankExecutor::Impl::enqueue_p2p(std::size_t task) {
  const models::Task& t = program.tasks[task];
  Channel& channel = channels[static_cast<std::size_t>(needs.channel_of[task])];
  const std::size_t count = message_elements(t.bytes);
  const ncclResult_t status = t.kind == TaskKind::kPpSend
                                  ? nccl().send(channel.buffer.get(), count, ncclBfloat16, channel.nccl.peer,
                                                channel.nccl.comm, channel.stream->get())
                                  : nccl().recv(channel.buffer.get(), count, ncclBfloat16, channel.nccl.peer,
                                                channel.nccl.comm, channel.stream->get());
  check_nccl(status, where(task) + (t.kind == TaskKind::kPpSend ? ": ncclSend" : ": ncclRecv"), channel.nccl.comm);
}

void CudaRankExecutor::Impl::enqueue_dp(std::size_t task) {
  const models::Task& t = program.tasks[task];
  if (layout.data == 1) return;  // nothing to exchange (the simulator charges no transfer either)
  const CollectiveSize size = collective_size(t.op, t.bytes, static_cast<int>(layout.data));
  enqueue_collective(t.op, size, comms.data(), dp_input.get(), dp_output.get(), dp_stream.get(), where(task));
}

void CudaRankExecutor::Impl::enqueue(std::size_t task) {
  const models::Task& t = program.tasks[task];
  cudaStream_t stream = stream_of(task);
  if (t.host_sync) {
    // The host waits for what the synchronisation waits for (models/workload.h), as Megatron's
    // torch.cuda.synchronize() and get_batch's sizes.cpu() do; the GPU idles until the launches below.
    for (const std::int32_t d : t.deps) {
      check(cudaEventSynchronize(task_events[2 * static_cast<std::size_t>(d) + 1]),
            "cudaEventSynchronize (host synchronisation)");
    }
  }
  for (const std::int32_t d : t.deps) {
    const auto dep = static_cast<std::size_t>(d);
    if (stream_of(dep) == stream) continue;  // a stream runs in order
    check(cudaStreamWaitEvent(stream, task_events[2 * dep + 1], 0), "cudaStreamWaitEvent");
  }
  check(cudaEventRecord(task_events[2 * task], stream), "cudaEventRecord");
  switch (t.kind) {
    case TaskKind::kCompute:
      enqueue_compute(task);
      break;
    case TaskKind::kPpSend:
    case TaskKind::kPpRecv:
      enqueue_p2p(task);
      break;
    case TaskKind::kDpCollective:
      enqueue_dp(task);
      break;
  }
  check(cudaEventRecord(task_events[2 * task + 1], stream), "cudaEventRecord");
  enqueued.store(task + 1);
}

std::string CudaRankExecutor::Impl::first_unfinished() const {
  if (in_barrier.load()) return "the iteration barrier (a peer has not arrived)";
  cudaSetDevice(device);  // the watchdog's thread
  const std::size_t n = enqueued.load();
  for (std::size_t i = 0; i < n; ++i) {
    if (cudaEventQuery(task_events[2 * i + 1]) == cudaErrorNotReady) return task_text(program.tasks[i], i);
  }
  cudaGetLastError();
  return n < program.tasks.size() ? "the host, enqueueing " + task_text(program.tasks[n], n) : std::string();
}

void CudaRankExecutor::Impl::wait_for_iteration(Watchdog& watchdog) {
  cudaError_t status = cudaSuccess;
  for (cudaStream_t stream : {compute.get(), tp_stream.get(), dp_stream.get()}) {
    if (status == cudaSuccess) status = cudaStreamSynchronize(stream);
  }
  for (const Channel& channel : channels) {
    if (status == cudaSuccess) status = cudaStreamSynchronize(channel.stream->get());
  }
  watchdog.stop();
  if (watchdog.fired()) throw CudaError("rank " + std::to_string(rank) + ": iteration aborted: " + watchdog.message());
  check(status, ("rank " + std::to_string(rank) + ": cudaStreamSynchronize (iteration end)").c_str());
}

std::vector<TaskRecord> CudaRankExecutor::Impl::records() const {
  std::vector<TaskRecord> out(program.tasks.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    TaskRecord& record = out[i];
    record.start = record.transfer_start = elapsed_ns(base[0], task_events[2 * i]);
    record.end = elapsed_ns(base[0], task_events[2 * i + 1]);
    if (program.tasks[i].kind != TaskKind::kCompute) continue;
    std::size_t e = needs.tp_first[i];
    for (const models::Task::KernelRun& run : program.tasks[i].runs) {
      const models::KernelList& list = workload.kernels.at(static_cast<std::size_t>(run.kernels));
      if (layout.tensor == 1 || list.tp_collectives.empty()) continue;
      const bool overlapped = std::any_of(list.tp_collectives.begin(), list.tp_collectives.end(),
                                          [](const models::TpCollective& c) { return c.overlappable; });
      for (std::int32_t r = 0; r < run.repeat; ++r, e += kEventsPerTpRun) {
        if (overlapped) record.tp_exposed += std::max<sim::SimTime>(0, elapsed_ns(tp_events[e + 2], tp_events[e + 1]));
        record.tp_exposed += elapsed_ns(tp_events[e + 3], tp_events[e + 4]);
      }
    }
  }
  return out;
}

std::vector<TaskRecord> CudaRankExecutor::Impl::run_iteration() {
  if (comms.aborted()) throw CudaError("rank " + std::to_string(rank) + ": the communicators were aborted");
  enqueued.store(0);
  Watchdog watchdog(
      timeout, kPollInterval, [this] { return comms.async_error(); }, [this] { return first_unfinished(); },
      [this](const std::string&) { comms.abort(); });
  try {
    barrier();
    check(cudaEventRecord(base[0], compute.get()), "cudaEventRecord");
    for (cudaStream_t stream : {tp_stream.get(), dp_stream.get()}) {
      check(cudaStreamWaitEvent(stream, base[0], 0), "cudaStreamWaitEvent");
    }
    for (const Channel& channel : channels) {
      check(cudaStreamWaitEvent(channel.stream->get(), base[0], 0), "cudaStreamWaitEvent");
    }
    for (std::size_t i = 0; i < program.tasks.size(); ++i) enqueue(i);
  } catch (const CudaError& error) {
    watchdog.stop();
    if (watchdog.fired())
      throw CudaError("rank " + std::to_string(rank) + ": iteration aborted: " + watchdog.message());
    throw;
  }
  wait_for_iteration(watchdog);
  return records();
}

CudaRankExecutor::CudaRankExecutor(const models::Workload& workload, NcclComms& comms,
                                   std::chrono::milliseconds timeout) {
  try {
    impl_ = std::make_unique<Impl>(workload, comms, timeout);
  } catch (const DeviceMemoryError& error) {
    throw sim::ConfigError("plan.micro_batch_size", std::to_string(workload.plan.plan.micro_batch_size),
                           "a plan whose rank " + std::to_string(comms.rank()) + " buffers fit its GPU (" +
                               error.what() +
                               "); a larger tensor or pipeline parallel size or a smaller micro_batch_size "
                               "shrinks them");
  }
}

CudaRankExecutor::~CudaRankExecutor() = default;

std::vector<TaskRecord> CudaRankExecutor::run_iteration() {
  return impl_->run_iteration();
}

std::size_t CudaRankExecutor::device_bytes() const {
  std::size_t bytes = impl_->ops.device_bytes() + impl_->dp_input.bytes() + impl_->dp_output.bytes() +
                      impl_->tp_input.bytes() + impl_->tp_output.bytes();
  for (const Channel& channel : impl_->channels) bytes += channel.buffer.bytes();
  return bytes;
}

}  // namespace megasim::backend::cuda
