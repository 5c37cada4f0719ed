// The pipeline part of a stage program: Megatron's compute order (pipeline_schedule.h) with the
// point-to-point transfers where Megatron-LM's schedules.py posts and waits for them.
//
// Communication points. Megatron groups its p2p calls into batched isend/irecv calls between
// compute steps. Without overlap_p2p_comm every call blocks: after each compute step (after each
// forward-backward pair in the interleaved schedule's steady state, which runs F then B before
// send_forward_backward_recv_forward_backward) it sends the outputs of the steps just run and
// receives the inputs of the steps about to run, and the next compute waits for all of it. With
// overlap_p2p_comm (interleaved only) the calls are asynchronous: after a forward Megatron posts its
// send and the receive of the next forward's input, after a backward likewise for backwards (the
// first backward's receive goes out after the last warm-up forward), and a compute waits only for
// its own input and for the send of the previous compute of its direction (fwd_wait_handles /
// bwd_wait_handles hold both).
// Here: sends of a group are posted when the group's last compute ends, receives when the compute
// before their point ends (at the start for the first), and compute tasks depend on what Megatron
// waits for. With groups of N > pp micro-batches (microbatch_group_size_per_vp_stage) the first
// rank's forward inputs from the last rank (and the last rank's backward inputs from the first)
// arrive before they are needed and are buffered (post_leading_receives_early). Every transfer still outstanding when
// the schedule returns is waited for before the gradient reduction finishes (schedules.py waits on its remaining
// handles).
//
// Host synchronisation (workload.h). With batch_p2p_sync and without overlap_p2p_comm, every
// communication point that moved data ends in torch.cuda.synchronize(): the compute after it waits
// for a kHostSync task that waits for the point's transfers and for the rank's earlier compute and
// DP work. Synchronous data loading synchronises with the compute stream (broadcast_data's
// sizes.cpu()). With
// average_loss_per_micro_batch (and dp > 1) the last stage all-reduces each micro-batch's loss over
// the DP group after the last chunk's forward, and its next compute waits for that.
//
// Sharded data parallelism (workload_dp.cc). A step that needs its chunk's parameters gathered
// (every forward with sharded parameters, every backward too with reshard_after_forward) waits for
// its all-gather. With overlap_param_gather the gather is issued when the compute two steps before
// ends, so it runs during the step before (the first two at the start); without it, when the step
// before ends. With sharded gradients every backward's reduce-scatter follows it; without
// overlap_grad_reduce the next compute waits for it.
#include <algorithm>
#include <array>
#include <unordered_set>
#include <utility>
#include <vector>

#include "models/moe.h"
#include "models/workload_internal.h"
#include "sim/error.h"

namespace megasim::models::workload_detail {
namespace {

constexpr double kLossBytes = 4;  // one fp32 loss (average_losses_across_data_parallel_group)

struct StepComm {
  std::int64_t virtual_stage = 0;
  bool recv = false;             // needs an input from another stage
  bool send = false;             // sends its output to another stage
  std::int32_t group = 0;        // communication group (non-overlapped) or step index (overlapped)
  std::int32_t recv_after = -1;  // step after which the receive is posted; -1: at the start
};

// The leading stage of a direction (the first rank for forwards, the last for backwards) receives
// from the ending stage, which runs pp - 1 steps of the same table behind it: Megatron's
// recv_tensor_from_previous_stage posts, after the leading rank's step k of that direction, the
// receive of what the ending rank produced at its step k - (pp - 1), and buffers it until the step
// that needs it. With groups of pp (the 2023 schedule) that step is the next one, so nothing moves;
// with larger groups N the input waits N - pp steps in the buffer. Here the receive of such a step
// is posted at that point (after the step of table index producer + pp - 1, or after its group's
// last step without overlap_p2p_comm), which is where its sender's matching call is.
void post_leading_receives_early(const ResolvedPlan& plan, std::int64_t stage, const std::vector<ScheduleStep>& steps,
                                 const std::vector<std::int32_t>& last_of_group, std::vector<StepComm>& comm) {
  const std::int64_t v = plan.virtual_stages, m = plan.num_microbatches;
  if (v == 1 || (stage != 0 && stage != plan.pp - 1)) return;
  // Per pass: the table index of each (micro-batch, chunk) and the step holding each table index.
  std::array<std::vector<std::int32_t>, 2> table_index, step_at;
  for (auto& t : table_index) t.assign(static_cast<std::size_t>(m * v), -1);
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const auto pass = static_cast<std::size_t>(steps[i].pass == PassKind::kForward ? 0 : 1);
    table_index[pass][static_cast<std::size_t>(steps[i].microbatch * v + steps[i].chunk)] =
        static_cast<std::int32_t>(step_at[pass].size());
    step_at[pass].push_back(static_cast<std::int32_t>(i));
  }
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const bool forward = steps[i].pass == PassKind::kForward;
    const std::int64_t chunk = steps[i].chunk;
    const bool leading = forward ? stage == 0 && chunk > 0 : stage == plan.pp - 1 && chunk < v - 1;
    if (!leading || !comm[i].recv) continue;
    const auto pass = static_cast<std::size_t>(forward ? 0 : 1);
    const std::int64_t producer_chunk = forward ? chunk - 1 : chunk + 1;
    const std::int32_t producer = table_index[pass][static_cast<std::size_t>(steps[i].microbatch * v + producer_chunk)];
    const std::int32_t posted_after = step_at[pass][static_cast<std::size_t>(producer + plan.pp - 1)];
    MEGASIM_ASSERT(posted_after < static_cast<std::int32_t>(i), "a receive is posted before the step that needs it");
    comm[i].recv_after =
        plan.plan.overlap_p2p_comm
            ? posted_after
            : last_of_group[static_cast<std::size_t>(comm[static_cast<std::size_t>(posted_after)].group)];
  }
}

std::vector<StepComm> plan_comm(const ResolvedPlan& plan, std::int64_t stage, const std::vector<ScheduleStep>& steps) {
  const std::int64_t last_vs = plan.pp * plan.virtual_stages - 1;
  const auto n = static_cast<std::int32_t>(steps.size());
  const bool overlap = plan.plan.overlap_p2p_comm;
  const auto warmup = static_cast<std::int32_t>(
      num_warmup_steps(stage, plan.pp, plan.num_microbatches, plan.virtual_stages, plan.microbatch_group()));
  std::vector<StepComm> out(steps.size());
  std::int32_t group = 0;
  std::vector<std::int32_t> last_of_group;
  std::array<std::int32_t, 2> previous = {-1, warmup - 1};  // last forward, backward (overlap_p2p_comm)
  for (std::int32_t i = 0; i < n; ++i) {
    const bool forward = steps[static_cast<std::size_t>(i)].pass == PassKind::kForward;
    StepComm& c = out[static_cast<std::size_t>(i)];
    c.virtual_stage = virtual_stage_of(stage, steps[static_cast<std::size_t>(i)].chunk, plan.pp);
    c.recv = forward ? c.virtual_stage > 0 : c.virtual_stage < last_vs;
    c.send = forward ? c.virtual_stage < last_vs : c.virtual_stage > 0;
    // The interleaved steady state runs a forward and the backward after it with no call between.
    const bool paired = plan.interleaved() && !overlap && i > warmup && i < n - warmup && (i - warmup) % 2 == 1;
    MEGASIM_ASSERT(!paired || !forward, "the interleaved steady state pairs a forward with a backward");
    if (i > 0 && !paired) ++group;
    c.group = group;
    if (static_cast<std::size_t>(group) >= last_of_group.size()) last_of_group.push_back(i);
    last_of_group[static_cast<std::size_t>(group)] = i;
    if (overlap) {
      c.recv_after = previous[forward ? 0U : 1U];
      previous[forward ? 0U : 1U] = i;
    } else {
      c.recv_after = group == 0 ? -1 : last_of_group[static_cast<std::size_t>(group - 1)];
    }
  }
  post_leading_receives_early(plan, stage, steps, last_of_group, out);
  return out;
}

class StageBuilder {
 public:
  StageBuilder(const ModelSpec& model, const ResolvedPlan& plan, const KernelIds& ids, std::int64_t stage)
      : model_(model),
        plan_(plan),
        ids_(ids),
        stage_(stage),
        steps_(pipeline_schedule(stage, plan.pp, plan.num_microbatches, plan.virtual_stages, plan.microbatch_group())),
        comm_(plan_comm(plan, stage, steps_)),
        compute_(steps_.size(), -1),
        recv_(steps_.size(), -1),
        send_(steps_.size(), -1),
        last_backward_(last_backward_steps()),
        sharded_gather_(steps_.size(), -1),
        recvs_after_(steps_.size() + 1),
        moe_layers_(static_cast<std::size_t>(plan.virtual_stages), 0) {
    for (std::size_t i = 0; i < steps_.size(); ++i) {
      if (comm_[i].recv)
        recvs_after_[static_cast<std::size_t>(comm_[i].recv_after + 1)].push_back(static_cast<std::int32_t>(i));
    }
    // Once per chunk, not per step (chunk_first_layer walks the virtual stages before it).
    if (is_moe(model)) {
      for (std::int64_t c = 0; c < plan.virtual_stages; ++c) {
        moe_layers_[static_cast<std::size_t>(c)] = static_cast<std::int32_t>(
            moe_layers_in(model, plan.chunk_first_layer(stage, c), plan.chunk_layers(stage, c)));
      }
    }
  }

  StageProgram build() {
    gathers_ = add_prefetched_gathers(model_, plan_, stage_, program_);
    post_recvs_after(-1);
    const auto n = static_cast<std::int32_t>(steps_.size());
    for (std::int32_t i = 0; i < gather_lead(); ++i) add_sharded_gather_for(i, -1);
    for (std::int32_t i = 0; i < n; ++i) {
      add_compute(i);
      add_sharded_gather_for(i + gather_lead(), i);
      add_sharded_reduce_after(i);
      const bool group_ends =
          i + 1 == n || comm_[static_cast<std::size_t>(i + 1)].group != comm_[static_cast<std::size_t>(i)].group;
      if (!group_ends) continue;
      for (std::int32_t j = first_of_group(i); j <= i; ++j) add_send(j, i);
      post_recvs_after(i);
      add_overlapped_grad_reduces(first_of_group(i), i);
    }
    PipelineResult result;
    result.final_compute = compute_.back();
    for (std::int32_t task = 0; task < program_.size(); ++task) {
      const TaskKind kind = program_.at(task).kind;
      const bool p2p = kind == TaskKind::kPpSend || kind == TaskKind::kPpRecv;
      if (p2p && !waited_.contains(task)) result.unwaited_p2p.push_back(task);
    }
    add_iteration_tail(model_, plan_, ids_, stage_, result, std::move(grad_reduces_), program_);
    return program_.take();
  }

 private:
  const ScheduleStep& step(std::int32_t i) const { return steps_[static_cast<std::size_t>(i)]; }
  const StepComm& comm(std::int32_t i) const { return comm_[static_cast<std::size_t>(i)]; }

  std::int32_t first_of_group(std::int32_t i) const {
    while (i > 0 && comm(i - 1).group == comm(i).group) --i;
    return i;
  }

  // Step index of each chunk's last backward, for overlap_grad_reduce.
  std::vector<std::int32_t> last_backward_steps() const {
    std::vector<std::int32_t> last(static_cast<std::size_t>(plan_.virtual_stages), -1);
    for (std::size_t i = 0; i < steps_.size(); ++i) {
      if (steps_[i].pass == PassKind::kBackward)
        last[static_cast<std::size_t>(steps_[i].chunk)] = static_cast<std::int32_t>(i);
    }
    return last;
  }

  void post_recvs_after(std::int32_t after) {
    for (const std::int32_t step_index : recvs_after_[static_cast<std::size_t>(after + 1)]) {
      const auto i = static_cast<std::size_t>(step_index);
      const bool forward = steps_[i].pass == PassKind::kForward;
      Task t;
      t.kind = TaskKind::kPpRecv;
      t.stream = StreamKind::kPp;
      t.category = forward ? TaskCategory::kPipelineForward : TaskCategory::kPipelineBackward;
      t.microbatch = steps_[i].microbatch;
      t.chunk = steps_[i].chunk;
      t.peer_offset = forward ? -1 : +1;
      t.tag = pp_tag(plan_, steps_[i].pass, steps_[i].microbatch, comm_[i].virtual_stage);
      t.bytes = pp_transfer_bytes(model_, plan_);
      if (after >= 0) t.deps.push_back(compute_[static_cast<std::size_t>(after)]);
      recv_[i] = program_.add(std::move(t));
    }
  }

  void add_send(std::int32_t i, std::int32_t group_last) {
    if (!comm(i).send) return;
    const bool forward = step(i).pass == PassKind::kForward;
    Task t;
    t.kind = TaskKind::kPpSend;
    t.stream = StreamKind::kPp;
    t.category = forward ? TaskCategory::kPipelineForward : TaskCategory::kPipelineBackward;
    t.microbatch = step(i).microbatch;
    t.chunk = step(i).chunk;
    t.peer_offset = forward ? +1 : -1;
    t.tag = pp_tag(plan_, step(i).pass, step(i).microbatch, comm(i).virtual_stage + (forward ? 1 : -1));
    t.bytes = pp_transfer_bytes(model_, plan_);
    t.deps.push_back(compute_[static_cast<std::size_t>(i)]);
    if (group_last != i) t.deps.push_back(compute_[static_cast<std::size_t>(group_last)]);
    send_[static_cast<std::size_t>(i)] = program_.add(std::move(t));
  }

  // What compute step i waits for (see the file comment).
  std::vector<std::int32_t> compute_deps(std::int32_t i) {
    std::vector<std::int32_t> deps;
    auto wait = [&](std::int32_t task) {
      if (task < 0) return;
      deps.push_back(task);
      waited_.insert(task);
    };
    if (plan_.plan.overlap_p2p_comm) {
      for (std::int32_t j = i - 1; j >= 0; --j) {
        if (step(j).pass != step(i).pass) continue;
        wait(send_[static_cast<std::size_t>(j)]);
        break;
      }
    } else if (i > 0 && comm(i - 1).group != comm(i).group) {
      // The point's batched call: the previous group's sends and every receive it posted.
      for (std::int32_t j = first_of_group(i - 1); j < i; ++j) wait(send_[static_cast<std::size_t>(j)]);
      for (const std::int32_t j : recvs_after_[static_cast<std::size_t>(i)]) {
        if (j != i) wait(recv_[static_cast<std::size_t>(j)]);
      }
    }
    wait(recv_[static_cast<std::size_t>(i)]);
    wait(sharded_gather_[static_cast<std::size_t>(i)]);
    if (step(i).pass == PassKind::kForward && step(i).microbatch == 0) {
      for (std::int32_t g : gathers_.at(static_cast<std::size_t>(step(i).chunk))) wait(g);
    }
    return deps;
  }

  Task compute_task(std::int32_t i) const {
    const ScheduleStep& s = step(i);
    const bool forward = s.pass == PassKind::kForward;
    const bool embedding = stage_ == 0 && s.chunk == 0;
    const bool output = stage_ == plan_.pp - 1 && s.chunk == plan_.virtual_stages - 1;
    const auto moe = moe_layers_[static_cast<std::size_t>(s.chunk)];
    const auto dense = static_cast<std::int32_t>(plan_.chunk_layers(stage_, s.chunk)) - moe;
    Task t;
    t.category = forward ? TaskCategory::kForward : TaskCategory::kBackward;
    t.microbatch = s.microbatch;
    t.chunk = s.chunk;
    // The chunk's dense and MoE layers as a run each (their order inside one task does not change
    // its time); a kind the chunk holds none of gets no run.
    const auto add_layers = [&](std::int32_t dense_list, std::int32_t moe_list) {
      if (dense > 0) t.runs.push_back({dense_list, dense});
      if (moe > 0) t.runs.push_back({moe_list, moe});
    };
    if (forward) {
      if (embedding) t.runs.push_back({ids_.embedding_forward, 1});
      add_layers(ids_.chunk_forward, ids_.moe_forward);
      if (output) t.runs.push_back({ids_.output_forward, 1});
    } else {
      if (output) t.runs.push_back({ids_.output_backward, 1});
      add_layers(ids_.chunk_backward, ids_.moe_backward);
      if (embedding) t.runs.push_back({ids_.embedding_backward, 1});
    }
    return t;
  }

  // Data loading: get_batch runs inside forward_step, after the input arrived, on the stages that
  // read the batch: the first for chunk 0, the last for its last chunk.
  std::int32_t data_list(std::int32_t i) const {
    if (step(i).pass != PassKind::kForward) return -1;
    if (stage_ == 0 && step(i).chunk == 0) return ids_.data_first;
    if (stage_ == plan_.pp - 1 && step(i).chunk == plan_.virtual_stages - 1) return ids_.data_last;
    return -1;
  }

  // Whether compute step i follows a batched p2p call that Megatron ends with a synchronize: a
  // communication point (its deps hold transfers) of the non-overlapped schedule.
  bool follows_p2p_sync(const std::vector<std::int32_t>& deps) const {
    if (!plan_.plan.batch_p2p_sync || plan_.plan.overlap_p2p_comm) return false;
    return std::any_of(deps.begin(), deps.end(), [this](std::int32_t d) {
      const TaskKind kind = program_.at(d).kind;
      return kind == TaskKind::kPpSend || kind == TaskKind::kPpRecv;
    });
  }

  // A host synchronisation waits for `deps` and for the rank's latest compute work, and a
  // device-wide one (torch.cuda.synchronize) for its latest DP work too; a device-to-host copy
  // (get_batch's sizes.cpu()) waits for the compute stream alone.
  std::vector<std::int32_t> host_sync_deps(std::vector<std::int32_t> deps, bool device_wide) const {
    if (const std::int32_t last = program_.last_on(StreamKind::kCompute); last >= 0) deps.push_back(last);
    if (const std::int32_t last = program_.last_on(StreamKind::kDp); device_wide && last >= 0) deps.push_back(last);
    return deps;
  }

  void add_compute(std::int32_t i) {
    std::vector<std::int32_t> deps = compute_deps(i);
    if (loss_reduce_ >= 0) deps.push_back(std::exchange(loss_reduce_, -1));
    if (blocking_reduce_ >= 0) deps.push_back(std::exchange(blocking_reduce_, -1));
    if (follows_p2p_sync(deps)) {
      Task sync;
      sync.category = TaskCategory::kHostSync;
      sync.microbatch = step(i).microbatch;
      sync.chunk = step(i).chunk;
      sync.host_sync = true;
      sync.deps = host_sync_deps(std::move(deps), true);
      deps = {program_.add(std::move(sync))};
    }
    if (const std::int32_t data = data_list(i); data >= 0) {
      Task load;
      load.category = TaskCategory::kDataLoading;
      load.microbatch = step(i).microbatch;
      load.chunk = step(i).chunk;
      load.runs.push_back({data, 1});
      load.host_sync = true;
      // get_batch runs before the forward's parameter all-gather hooks: it does not wait for them.
      std::vector<std::int32_t> waits;
      for (const std::int32_t d : deps) {
        if (program_.at(d).category != TaskCategory::kParameterGather) waits.push_back(d);
      }
      load.deps = host_sync_deps(std::move(waits), false);
      program_.add(std::move(load));
    }
    Task t = compute_task(i);
    t.deps = std::move(deps);
    compute_[static_cast<std::size_t>(i)] = program_.add(std::move(t));
    add_loss_reduce(i);
  }

  // pretrain_gpt.py's loss_func runs at the end of the last chunk's forward on the last stage.
  void add_loss_reduce(std::int32_t i) {
    if (!plan_.plan.average_loss_per_micro_batch || plan_.replicas() <= 1) return;
    if (step(i).pass != PassKind::kForward || stage_ != plan_.pp - 1 || step(i).chunk != plan_.virtual_stages - 1)
      return;
    Task t;
    t.kind = TaskKind::kDpCollective;
    t.stream = StreamKind::kDp;
    t.category = TaskCategory::kLossReduce;
    t.microbatch = step(i).microbatch;
    t.chunk = step(i).chunk;
    t.op = CollectiveOp::kAllReduce;
    t.bytes = kLossBytes;
    t.deps.push_back(compute_[static_cast<std::size_t>(i)]);
    loss_reduce_ = program_.add(std::move(t));
  }

  // Steps ahead of a compute step at whose end a sharded parameter gather is issued (file comment).
  std::int32_t gather_lead() const {
    if (!shards_parameters(plan_.plan)) return 0;
    return plan_.plan.overlap_param_gather ? 2 : 1;
  }

  // The gather of step `i`'s chunk, if it needs one, issued when compute step `after` ends (-1: at
  // the start).
  void add_sharded_gather_for(std::int32_t i, std::int32_t after) {
    if (i >= static_cast<std::int32_t>(steps_.size()) || !shards_parameters(plan_.plan)) return;
    if (step(i).pass == PassKind::kBackward && !plan_.plan.reshard_after_forward) return;
    std::vector<std::int32_t> deps;
    if (after >= 0) deps.push_back(compute_[static_cast<std::size_t>(after)]);
    sharded_gather_[static_cast<std::size_t>(i)] =
        add_sharded_gather(model_, plan_, stage_, step(i), std::move(deps), program_);
  }

  void add_sharded_reduce_after(std::int32_t i) {
    if (!shards_gradients(plan_.plan) || step(i).pass != PassKind::kBackward) return;
    const std::int32_t reduce =
        add_sharded_reduce(model_, plan_, stage_, step(i), {compute_[static_cast<std::size_t>(i)]}, program_);
    grad_reduces_.push_back(reduce);
    if (!plan_.plan.overlap_grad_reduce) blocking_reduce_ = reduce;
  }

  void add_overlapped_grad_reduces(std::int32_t first, std::int32_t last) {
    if (!plan_.plan.overlap_grad_reduce || shards_gradients(plan_.plan)) return;
    for (std::int32_t i = first; i <= last; ++i) {
      if (last_backward_[static_cast<std::size_t>(step(i).chunk)] != i) continue;
      add_gradient_reduces(model_, plan_, stage_, step(i).chunk, {compute_[static_cast<std::size_t>(i)]}, program_,
                           grad_reduces_);
    }
  }

  const ModelSpec& model_;
  const ResolvedPlan& plan_;
  const KernelIds& ids_;
  std::int64_t stage_;
  std::vector<ScheduleStep> steps_;
  std::vector<StepComm> comm_;
  std::vector<std::int32_t> compute_, recv_, send_;     // task index per step, -1 when none
  std::vector<std::int32_t> last_backward_;             // step of each chunk's last backward
  std::vector<std::int32_t> sharded_gather_;            // task index of each step's parameter gather, -1 when none
  std::vector<std::vector<std::int32_t>> recvs_after_;  // [j + 1]: steps whose receive follows step j
  std::vector<std::int32_t> moe_layers_;                // per model chunk: its MoE layers
  std::vector<std::vector<std::int32_t>> gathers_;
  std::vector<std::int32_t> grad_reduces_;
  std::unordered_set<std::int32_t> waited_;
  std::int32_t loss_reduce_ = -1;      // the loss all-reduce the next compute waits for, -1 when none
  std::int32_t blocking_reduce_ = -1;  // a sharded reduce-scatter the next compute waits for, -1 when none
  ProgramBuilder program_;
};

}  // namespace

std::int32_t ProgramBuilder::add(Task task) {
  std::sort(task.deps.begin(), task.deps.end());
  task.deps.erase(std::unique(task.deps.begin(), task.deps.end()), task.deps.end());
  const auto index = static_cast<std::int32_t>(program_.tasks.size());
  last_on_stream_[static_cast<std::size_t>(task.stream)] = index;
  program_.tasks.push_back(std::move(task));
  return index;
}

std::int64_t pp_tag(const ResolvedPlan& plan, PassKind pass, std::int64_t microbatch, std::int64_t virtual_stage) {
  return (virtual_stage * plan.num_microbatches + microbatch) * 2 + (pass == PassKind::kBackward ? 1 : 0);
}

std::int64_t embedding_tag(const ResolvedPlan& plan, bool from_first_stage) {
  return 2 * plan.num_microbatches * plan.pp * plan.virtual_stages + (from_first_stage ? 0 : 1);
}

StageProgram build_stage_program(const ModelSpec& model, const ResolvedPlan& plan, const KernelIds& ids,
                                 std::int64_t stage) {
  return StageBuilder(model, plan, ids, stage).build();
}

}  // namespace megasim::models::workload_detail
