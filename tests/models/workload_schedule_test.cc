// The pipeline part of build_workload's programs: a small plan's full task list, written out by hand
// from Megatron's 1F1B code, and a reference player that runs every program with free
// communication to show the dependencies never deadlock and reproduce the ideal schedule.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "models/pipeline_schedule.h"
#include "models/workload.h"
#include "workload_test_util.h"

namespace megasim::models {
namespace {

using testing::resolved;
using testing::Shape;
using testing::small_gpt;

std::string line(const Task& t) {
  std::string out = std::string(to_string(t.kind)) + " " + std::string(to_string(t.category));
  if (t.microbatch >= 0) out += " mb" + std::to_string(t.microbatch);
  if (t.kind == TaskKind::kPpSend || t.kind == TaskKind::kPpRecv) {
    out += (t.peer_offset > 0 ? " +1" : " -1") + std::string(" tag") + std::to_string(t.tag);
  }
  out += " <-";
  for (std::int32_t d : t.deps) out += " " + std::to_string(d);
  return out;
}

std::vector<std::string> lines(const StageProgram& p) {
  std::vector<std::string> out;
  for (const Task& t : p.tasks) out.push_back(line(t));
  return out;
}

// pp = 2, m = 2, v = 1, tp = dp = 1, Megatron defaults (synchronous p2p, data loading, no
// overlap, tied embeddings). Tags: (virtual stage * m + micro-batch) * 2 + (1 for gradients);
// the embedding exchange uses 2*m*pp*v = 8 (first -> last) and 9 (last -> first).
// Stage 0 (1F1B, 1 warm-up forward): recv_forward is a no-op on the first stage; after F0
// send_forward; after F1 send_forward_recv_backward (blocking, so B0 waits for both); after B0
// recv_backward for B1 (the first stage sends no gradients).
// Stage 1 (no warm-up): recv_forward, F0, B0, send_backward_recv_forward, F1, B1, send_backward.
// Both then all-reduce the gradient bucket once the schedule (and its last send) is done, exchange
// the tied embedding gradient, and step.
TEST(WorkloadSchedule, SmallPlanIsMegatrons1F1B) {
  const Workload w = build_workload(small_gpt(), resolved(small_gpt(), Shape{1, 2, 1, 2, 1, 1}));
  // Every communication point that moves data ends in Megatron's torch.cuda.synchronize() (a
  // host_sync task waiting for the point's transfers and the rank's last compute); the loss is not
  // all-reduced at dp = 1.
  const std::vector<std::string> stage0 = {
      "compute data_loading mb0 <-",                 // 0
      "compute forward mb0 <-",                      // 1
      "pp_send pipeline_forward mb0 +1 tag4 <- 1",   // 2: to virtual stage 1
      "compute host_sync mb1 <- 1 2",                // 3: blocking send of F0 done, synchronize
      "compute data_loading mb1 <- 3",               // 4
      "compute forward mb1 <- 3",                    // 5
      "pp_send pipeline_forward mb1 +1 tag6 <- 5",   // 6
      "pp_recv pipeline_backward mb0 +1 tag1 <- 5",  // 7: posted with the send, after F1
      "compute host_sync mb0 <- 5 6 7",              // 8
      "compute backward mb0 <- 8",                   // 9
      "pp_recv pipeline_backward mb1 +1 tag3 <- 9",  // 10
      "compute host_sync mb1 <- 9 10",               // 11
      "compute backward mb1 <- 11",                  // 12
      "dp_collective gradient_reduce <- 12",         // 13
      "pp_send gradient_reduce -1 tag8 <- 12 13",    // 14
      "pp_recv gradient_reduce -1 tag9 <- 12 13",    // 15
      "compute optimizer <- 12 13 14 15",            // 16
  };
  const std::vector<std::string> stage1 = {
      "pp_recv pipeline_forward mb0 -1 tag4 <-",      // 0
      "compute host_sync mb0 <- 0",                   // 1
      "compute data_loading mb0 <- 1",                // 2: labels for the loss
      "compute forward mb0 <- 1",                     // 3
      "compute backward mb0 <-",                      // 4: the last stage sends no activations
      "pp_send pipeline_backward mb0 -1 tag1 <- 4",   // 5
      "pp_recv pipeline_forward mb1 -1 tag6 <- 4",    // 6
      "compute host_sync mb1 <- 4 5 6",               // 7
      "compute data_loading mb1 <- 7",                // 8
      "compute forward mb1 <- 7",                     // 9
      "compute backward mb1 <-",                      // 10
      "pp_send pipeline_backward mb1 -1 tag3 <- 10",  // 11
      "dp_collective gradient_reduce <- 10 11",       // 12
      "pp_send gradient_reduce +1 tag9 <- 10 11 12",  // 13
      "pp_recv gradient_reduce +1 tag8 <- 10 11 12",  // 14
      "compute optimizer <- 10 11 12 13 14",          // 15
  };
  ASSERT_EQ(w.stages.size(), 2u);
  EXPECT_EQ(lines(w.stages[0]), stage0);
  EXPECT_EQ(lines(w.stages[1]), stage1);
}

// Plays the programs of one data-parallel replica: a compute task takes `forward` or `backward`
// units (data loading and the optimizer none), every transfer and collective is instantaneous once
// both sides are posted. Streams run in program order; p2p tasks are posted in program order once
// their dependencies have finished (workload.h's semantics).
struct Played {
  bool complete = false;
  double makespan = 0;
};

class Player {
 public:
  Player(const Workload& w, double forward, double backward) : w_(w), forward_(forward), backward_(backward) {
    for (std::size_t s = 0; s < w.stages.size(); ++s) {
      const auto& tasks = w.stages[s].tasks;
      finish_.emplace_back(tasks.size(), -1.0);
      posted_.emplace_back(tasks.size(), -1.0);
      for (std::size_t i = 0; i < tasks.size(); ++i) {
        if (tasks[i].kind == TaskKind::kPpSend || tasks[i].kind == TaskKind::kPpRecv) {
          partner_key_[{static_cast<std::int64_t>(s), tasks[i].kind, tasks[i].tag}] = static_cast<std::int32_t>(i);
        }
      }
    }
    cursor_.assign(w.stages.size(), {0, 0, 0, 0});
    free_.assign(w.stages.size(), {0.0, 0.0, 0.0, 0.0});
  }

  Played run() {
    bool progress = true;
    while (progress) {
      progress = false;
      for (std::size_t s = 0; s < w_.stages.size(); ++s) {
        for (StreamKind stream : {StreamKind::kCompute, StreamKind::kPp, StreamKind::kDp})
          progress |= advance(s, stream);
        progress |= match(s);
      }
    }
    Played out;
    out.complete = true;
    for (const auto& stage : finish_) {
      for (double f : stage) {
        out.complete &= f >= 0;
        out.makespan = std::max(out.makespan, f);
      }
    }
    return out;
  }

 private:
  double duration(const Task& t) const {
    if (t.kind != TaskKind::kCompute) return 0;
    if (t.category == TaskCategory::kForward) return forward_;
    return t.category == TaskCategory::kBackward ? backward_ : 0;
  }

  // Starts (or posts) the stream's next tasks while their dependencies have finished.
  bool advance(std::size_t s, StreamKind stream) {
    const auto& tasks = w_.stages[s].tasks;
    auto& cursor = cursor_[s][static_cast<std::size_t>(stream)];
    double& free = free_[s][static_cast<std::size_t>(stream)];
    bool progress = false;
    for (; cursor < tasks.size(); ++cursor) {
      const Task& t = tasks[cursor];
      if (t.stream != stream) continue;
      double ready = free;
      for (std::int32_t d : t.deps) {
        const double f = finish_[s][static_cast<std::size_t>(d)];
        if (f < 0) return progress;
        ready = std::max(ready, f);
      }
      if (stream == StreamKind::kPp) {
        posted_[s][cursor] = ready;
      } else {
        finish_[s][cursor] = ready + duration(t);
      }
      free = stream == StreamKind::kPp ? ready : finish_[s][cursor];
      progress = true;
    }
    return progress;
  }

  // Completes posted transfers whose partner is posted too.
  bool match(std::size_t s) {
    bool progress = false;
    const auto& tasks = w_.stages[s].tasks;
    const auto pp = static_cast<std::int64_t>(w_.stages.size());
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      if (posted_[s][i] < 0 || finish_[s][i] >= 0) continue;
      const Task& t = tasks[i];
      const auto peer = static_cast<std::size_t>(((static_cast<std::int64_t>(s) + t.peer_offset) % pp + pp) % pp);
      const TaskKind other = t.kind == TaskKind::kPpSend ? TaskKind::kPpRecv : TaskKind::kPpSend;
      const auto j = static_cast<std::size_t>(partner_key_.at({static_cast<std::int64_t>(peer), other, t.tag}));
      if (posted_[peer][j] < 0) continue;
      finish_[s][i] = finish_[peer][j] = std::max(posted_[s][i], posted_[peer][j]);
      progress = true;
    }
    return progress;
  }

  const Workload& w_;
  double forward_, backward_;
  std::vector<std::vector<double>> finish_, posted_;
  std::vector<std::array<std::size_t, 4>> cursor_;
  std::vector<std::array<double, 4>> free_;
  std::map<std::tuple<std::int64_t, TaskKind, std::int64_t>, std::int32_t> partner_key_;
};

// With free communication the programs reproduce the ideal schedule (pipeline_schedule.h's
// simulate_schedule_ideal, an independent computation from the schedule alone): the dependencies
// never deadlock and add no wait of their own. Blocking interleaved calls send a forward's output
// only after the backward paired with it, yet Megatron's warm-up of 2(pp - rank - 1) extra forwards
// keeps the receiver busy long enough that this costs nothing while communication is free.
TEST(WorkloadSchedule, FreeCommunicationReproducesTheIdealSchedule) {
  for (const auto& [forward, backward] : {std::pair{1.0, 2.0}, std::pair{1.0, 3.5}}) {
    for (const Shape& s : testing::pipeline_shapes()) {
      for (bool overlap : {false, true}) {
        if (overlap && s.v == 1) continue;  // overlap_p2p_comm needs the interleaved schedule
        const Workload w = build_workload(small_gpt(), resolved(small_gpt(), s, [&](ParallelPlan& p) {
                                            p.overlap_p2p_comm = overlap;
                                            p.use_distributed_optimizer = true;
                                            p.overlap_grad_reduce = overlap;
                                            p.overlap_param_gather = overlap;
                                          }));
        const Played played = Player(w, forward, backward).run();
        SCOPED_TRACE(testing::describe(s, 0) + (overlap ? " overlap_p2p_comm" : ""));
        ASSERT_TRUE(played.complete) << "deadlock";
        const double ideal = simulate_schedule_ideal(s.pp, s.m, s.v, forward, backward);
        EXPECT_DOUBLE_EQ(played.makespan, ideal);
      }
    }
  }
}

}  // namespace
}  // namespace megasim::models
