// The whole Perfetto trace of a pipelined, interleaved, data-parallel iteration: slices on one
// thread nest (Perfetto stacks them; two that partially overlap are dropped or mis-drawn), and every
// PP send has one flow arrow to the recv that pairs with it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "scenarios/config/json_reader.h"
#include "scenarios/config/loader.h"
#include "scenarios/report/perfetto_trace.h"
#include "scenarios/studies/run_study.h"

namespace megasim::scenarios {
namespace {

// 32 GPUs = TP 2 x PP 4 x DP 4, two model chunks per stage, 8 micro-batches: Megatron's interleaved
// schedule posts a send and a recv together (send_forward_recv_forward), so transfers of one rank
// overlap on the pp stream.
Scenario pipelined() {
  Scenario s;
  apply_overrides(s, {"cluster.gpus=32", "plan.tensor_model_parallel_size=2", "plan.pipeline_model_parallel_size=4",
                      "plan.num_layers_per_virtual_pipeline_stage=1", "model.num_layers=8", "model.hidden_size=1024",
                      "model.num_attention_heads=16", "model.seq_length=1024", "plan.global_batch_size=32",
                      "plan.micro_batch_size=1"});
  return s;
}

std::int64_t ns(double us) {
  return std::llround(us * 1e3);
}

struct Slice {
  std::int64_t begin = 0, end = 0;
  std::string name;
  std::int64_t microbatch = -1;
};
using Thread = std::pair<std::int64_t, std::int64_t>;  // (pid, tid)

struct Flow {
  std::optional<std::pair<Thread, std::int64_t>> start, finish;  // (thread, ts in ns)
  int starts = 0, finishes = 0;
};

struct Parsed {
  std::map<Thread, std::vector<Slice>> slices;
  std::map<std::int64_t, Flow> flows;  // by id
};

Parsed parse(const std::string& json) {
  Parsed out;
  const JsonValue doc = parse_json(json);
  for (const JsonValue& e : doc.find("traceEvents")->items) {
    const std::string& ph = e.find("ph")->text;
    const Thread thread{static_cast<std::int64_t>(e.find("pid")->number),
                        static_cast<std::int64_t>(e.find("tid")->number)};
    if (ph == "X") {
      const double ts = e.find("ts")->number;
      out.slices[thread].push_back({ns(ts), ns(ts + e.find("dur")->number), e.find("name")->text,
                                    static_cast<std::int64_t>(e.find("args")->find("microbatch")->number)});
    } else if (ph == "s" || ph == "f") {
      Flow& f = out.flows[static_cast<std::int64_t>(e.find("id")->number)];
      const std::pair<Thread, std::int64_t> at{thread, ns(e.find("ts")->number)};
      if (ph == "s") {
        f.start = at;
        ++f.starts;
      } else {
        EXPECT_EQ(e.find("bp")->text, "e");
        f.finish = at;
        ++f.finishes;
      }
    }
  }
  return out;
}

// The slices of `thread` enclosing `ts`.
std::vector<const Slice*> enclosing(const Parsed& p, const Thread& thread, std::int64_t ts) {
  std::vector<const Slice*> out;
  const auto it = p.slices.find(thread);
  if (it == p.slices.end()) return out;
  for (const Slice& s : it->second) {
    if (s.begin <= ts && ts <= s.end) out.push_back(&s);
  }
  return out;
}

class PerfettoNesting : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const Scenario s = pipelined();
    const RunResult run = run_iteration_study(s);
    layout_ = run.workload.plan.layout();
    ASSERT_EQ(layout_.pipeline, 4);
    ASSERT_EQ(run.workload.plan.virtual_stages, 2);
    parsed_ = new Parsed(parse(perfetto_trace_json(run.workload, run.trace, {{}, 0}, &s)));
  }
  static void TearDownTestSuite() { delete parsed_; }
  static models::ParallelLayout layout_;
  static Parsed* parsed_;
};
models::ParallelLayout PerfettoNesting::layout_;
Parsed* PerfettoNesting::parsed_ = nullptr;

// Slices of each group that partially overlap a slice enclosing their start (0 when every group's
// slices nest), and the first of them.
std::pair<std::size_t, std::string> partial_overlaps(const std::map<Thread, std::vector<Slice>>& groups) {
  std::size_t found = 0;
  std::string first;
  for (const auto& [thread, list] : groups) {
    std::vector<Slice> sorted = list;
    std::sort(sorted.begin(), sorted.end(), [](const Slice& a, const Slice& b) {
      return std::tie(a.begin, b.end) < std::tie(b.begin, a.end);  // by start, the longer first
    });
    std::vector<std::int64_t> open;  // ends of the slices enclosing the current one
    for (const Slice& s : sorted) {
      while (!open.empty() && open.back() <= s.begin) open.pop_back();
      if (!open.empty() && s.end > open.back() && found++ == 0) {
        first = "rank " + std::to_string(thread.first) + " tid " + std::to_string(thread.second) + ": " + s.name +
                " [" + std::to_string(s.begin) + ", " + std::to_string(s.end) + ") ns";
      }
      open.push_back(s.end);
    }
  }
  return {found, first};
}

TEST_F(PerfettoNesting, SlicesOnOneThreadNest) {
  std::size_t slices = 0;
  for (const auto& [thread, list] : parsed_->slices) slices += list.size();
  EXPECT_GT(slices, 1000u);
  const auto [overlaps, first] = partial_overlaps(parsed_->slices);
  EXPECT_EQ(overlaps, 0u) << first;
}

// The transfers of a rank do overlap: with each stream on one thread (tid % 4, the trace before
// lanes) some slices would partially overlap.
TEST_F(PerfettoNesting, ConcurrentTransfersGetTracksOfTheirOwn) {
  std::map<Thread, std::vector<Slice>> merged;
  for (const auto& [thread, list] : parsed_->slices) {
    auto& into = merged[{thread.first, thread.second % 4}];
    into.insert(into.end(), list.begin(), list.end());
  }
  EXPECT_GT(partial_overlaps(merged).first, 0u);
}

TEST_F(PerfettoNesting, EverySendHasOneFlowToItsRecv) {
  std::size_t sends = 0;
  for (const auto& [thread, list] : parsed_->slices) {
    for (const Slice& s : list) {
      if (s.name.rfind("pp send", 0) == 0) ++sends;
    }
  }
  EXPECT_EQ(parsed_->flows.size(), sends);
  for (const auto& [id, flow] : parsed_->flows) {
    ASSERT_EQ(flow.starts, 1) << "flow " << id;
    ASSERT_EQ(flow.finishes, 1) << "flow " << id;
    const auto& [from, ts_from] = *flow.start;
    const auto& [to, ts_to] = *flow.finish;
    // Each end lies in exactly one slice of its thread: the send, and a recv of the same micro-batch
    // on the same TP rank and replica of a neighbouring stage.
    const std::vector<const Slice*> send = enclosing(*parsed_, from, ts_from);
    const std::vector<const Slice*> recv = enclosing(*parsed_, to, ts_to);
    ASSERT_EQ(send.size(), 1u) << "flow " << id;
    ASSERT_EQ(recv.size(), 1u) << "flow " << id;
    EXPECT_EQ(send[0]->name.rfind("pp send", 0), 0u) << send[0]->name;
    EXPECT_EQ(recv[0]->name.rfind("pp recv", 0), 0u) << recv[0]->name;
    EXPECT_EQ(send[0]->microbatch, recv[0]->microbatch) << send[0]->name << " -> " << recv[0]->name;
    EXPECT_EQ(layout_.tp_rank(from.first), layout_.tp_rank(to.first));
    EXPECT_EQ(layout_.dp_rank(from.first), layout_.dp_rank(to.first));
    const std::int64_t hop = (layout_.pp_rank(to.first) - layout_.pp_rank(from.first) + 4) % 4;
    EXPECT_TRUE(hop == 1 || hop == 3) << from.first << " -> " << to.first;
    // The sim moves a transfer once, for its send and its recv alike.
    EXPECT_EQ(send[0]->begin, recv[0]->begin) << send[0]->name;
    EXPECT_EQ(send[0]->end, recv[0]->end) << send[0]->name;
  }
}

}  // namespace
}  // namespace megasim::scenarios
