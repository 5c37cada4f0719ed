// The sweep's confirmation (scenarios/studies/sweep/sweep_study.h, "Screen and confirmation") on
// rows made by hand, whose screens and full results are chosen so that the sequential rule's stops
// follow by hand: where it stops, that work handed out ahead of it is dropped whatever the order of
// results, that points are confirmed apart, and that rows the screen simulated in full count.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "scenarios/studies/sweep/sweep_study.h"

namespace megasim::scenarios {
namespace {

SweepRow screened_row(std::size_t point, std::int64_t tp, double screen) {
  SweepRow row;
  row.candidate.point = point;
  row.candidate.tp = tp;
  row.candidate.status = SweepStatus::kScreened;
  row.tokens_per_s = screen;
  row.screen_tokens_per_s = screen;
  return row;
}

SweepRow full_row(const SweepCandidate& c, double tokens) {
  SweepRow row;
  row.candidate = c;
  row.candidate.status = SweepStatus::kSimulated;
  row.tokens_per_s = tokens;
  return row;
}

// Point 0, screens 10, 9, 8, 7, 3 (tp 1..5) whose full results are 9.5, 8.5, 7.9, 6, 2. With the top
// 2 to confirm: 10 and 9 are simulated (fewer than 2 known before), which makes 8.5 the bound; 8 is
// below it, so the rule stops there and 8, 7, 3 stay screened.
std::vector<SweepRow> five_rows() {
  return {screened_row(0, 1, 10), screened_row(0, 2, 9), screened_row(0, 3, 8), screened_row(0, 4, 7),
          screened_row(0, 5, 3)};
}
const std::vector<double> kFull{9.5, 8.5, 7.9, 6, 2};

std::vector<SweepStatus> statuses(const std::vector<SweepRow>& rows) {
  std::vector<SweepStatus> out;
  for (const SweepRow& r : rows) out.push_back(r.candidate.status);
  return out;
}

TEST(SweepConfirmation, StopsAtTheFirstScreenBelowTheKthBestFullResult) {
  SweepConfirmation c(five_rows(), 2);
  EXPECT_EQ(c.remaining(), 5u);  // nothing known: every row could reach the top
  EXPECT_EQ(c.next(), std::optional<std::size_t>(0));
  c.record(0, full_row(c.candidate(0), kFull[0]));
  EXPECT_EQ(c.next(), std::optional<std::size_t>(1));
  c.record(1, full_row(c.candidate(1), kFull[1]));
  EXPECT_EQ(c.remaining(), 0u);
  EXPECT_EQ(c.next(), std::nullopt);
  const std::vector<SweepRow> rows = c.rows();
  EXPECT_EQ(statuses(rows),
            (std::vector<SweepStatus>{SweepStatus::kSimulated, SweepStatus::kSimulated, SweepStatus::kScreened,
                                      SweepStatus::kScreened, SweepStatus::kScreened}));
  EXPECT_EQ(rows[0].tokens_per_s, 9.5);
  EXPECT_EQ(rows[0].screen_tokens_per_s, 10);  // a confirmed row keeps its screen
  EXPECT_EQ(rows[2].tokens_per_s, 8);          // a screened row shows its screen
  EXPECT_NE(rows[2].candidate.reason.find("at most 8 tokens/s"), std::string::npos) << rows[2].candidate.reason;
  EXPECT_NE(rows[2].candidate.reason.find("the 2 plans of its point simulated in full at 8.5 tokens/s or more"),
            std::string::npos)
      << rows[2].candidate.reason;
}

// Four rows handed out before any result (as four threads would): the third and fourth were not
// needed by the rule, so their full results are dropped, whatever order the results arrive in.
TEST(SweepConfirmation, WorkHandedOutAheadIsDroppedSoRowsDoNotDependOnTiming) {
  const std::vector<SweepRow> sequential = [] {
    SweepConfirmation c(five_rows(), 2);
    for (std::optional<std::size_t> i = c.next(); i; i = c.next()) c.record(*i, full_row(c.candidate(*i), kFull[*i]));
    return c.rows();
  }();
  for (const std::vector<std::size_t>& arrival :
       {std::vector<std::size_t>{3, 2, 1, 0}, std::vector<std::size_t>{0, 1, 2, 3},
        std::vector<std::size_t>{2, 0, 3, 1}}) {
    SweepConfirmation c(five_rows(), 2);
    for (std::size_t k = 0; k < 4; ++k) EXPECT_EQ(c.next(), std::optional<std::size_t>(k));
    EXPECT_EQ(c.remaining(), 5u);  // 4 in flight, and row 4 while nothing is known
    for (const std::size_t i : arrival) c.record(i, full_row(c.candidate(i), kFull[i]));
    EXPECT_EQ(c.next(), std::nullopt);
    const std::vector<SweepRow> rows = c.rows();
    ASSERT_EQ(rows.size(), sequential.size());
    for (std::size_t i = 0; i < rows.size(); ++i) {
      EXPECT_EQ(rows[i].candidate.status, sequential[i].candidate.status) << i;
      EXPECT_EQ(rows[i].tokens_per_s, sequential[i].tokens_per_s) << i;
      EXPECT_EQ(rows[i].candidate.reason, sequential[i].candidate.reason) << i;
    }
  }
}

// Point 1's screens (20, 1) come first overall but neither stop nor are stopped by point 0's; a row
// of point 0 that the screen simulated in full (its replicas differ) counts towards point 0's top at
// once: with it at 9.9 and the top 1 to confirm, only the screen of 10 can beat it.
TEST(SweepConfirmation, PointsAreConfirmedApartAndFullResultsOfTheScreenCount) {
  std::vector<SweepRow> rows = five_rows();
  rows.push_back(screened_row(1, 1, 20));
  rows.push_back(screened_row(1, 2, 1));
  rows.push_back(full_row(screened_row(0, 6, 0).candidate, 9.9));
  SweepConfirmation c(rows, 1);
  EXPECT_EQ(c.next(), std::optional<std::size_t>(5));  // 20, point 1
  EXPECT_EQ(c.next(), std::optional<std::size_t>(0));  // 10 >= 9.9, point 0
  // 9 < 9.9 stops point 0; nothing of point 1 is known yet, so its screen of 1 could still be on top.
  EXPECT_EQ(c.next(), std::optional<std::size_t>(6));
  EXPECT_EQ(c.next(), std::nullopt);
  c.record(6, full_row(c.candidate(6), 0.9));
  c.record(5, full_row(c.candidate(5), 15));
  c.record(0, full_row(c.candidate(0), 9.5));
  // The rule for point 1: 20 simulated (15), then 1 < 15 stops it, so row 6's full result is dropped.
  const std::vector<SweepStatus> expected{SweepStatus::kSimulated, SweepStatus::kScreened, SweepStatus::kScreened,
                                          SweepStatus::kScreened,  SweepStatus::kScreened, SweepStatus::kSimulated,
                                          SweepStatus::kScreened,  SweepStatus::kSimulated};
  EXPECT_EQ(statuses(c.rows()), expected);
}

// The rows the rule simulates whatever the results (the first 3 by screen) go out costliest first, so
// that the longest simulation starts at once; the rest follow by screen. The rows that come of it are
// those of handing everything out by screen.
TEST(SweepConfirmation, RowsAlwaysSimulatedGoOutCostliestFirst) {
  const auto with_cost = [](SweepRow row, std::int64_t microbatches) {
    row.candidate.gpus = 64;
    row.candidate.tp = 8;
    row.candidate.virtual_stages = 2;
    row.candidate.num_microbatches = microbatches;
    return row;
  };
  // Screens 10, 9, 8, 7; costs (64 / 8 units x 2 chunks x micro-batches) 16, 80, 48, 1600.
  std::vector<SweepRow> rows{with_cost(screened_row(0, 1, 10), 1), with_cost(screened_row(0, 2, 9), 5),
                             with_cost(screened_row(0, 3, 8), 3), with_cost(screened_row(0, 4, 7), 100)};
  rows[0].candidate.micro_batch_size = 1;
  rows[1].candidate.micro_batch_size = 2;
  rows[2].candidate.micro_batch_size = 3;
  rows[3].candidate.micro_batch_size = 4;
  ASSERT_GT(estimated_cost(rows[1].candidate), estimated_cost(rows[2].candidate));
  ASSERT_GT(estimated_cost(rows[2].candidate), estimated_cost(rows[0].candidate));
  const std::vector<double> full{9.5, 8.5, 7.5, 6};
  SweepConfirmation c(rows, 3);
  EXPECT_EQ(c.next(), std::optional<std::size_t>(1));
  EXPECT_EQ(c.next(), std::optional<std::size_t>(2));
  EXPECT_EQ(c.next(), std::optional<std::size_t>(0));
  EXPECT_EQ(c.remaining(), 4u);  // 3 in flight, and row 3 while nothing is known
  for (const std::size_t i : {std::size_t{2}, std::size_t{0}, std::size_t{1}})
    c.record(i, full_row(c.candidate(i), full[i]));
  // 7 < 7.5, the third best full result: the rule stops before row 3, the costliest.
  EXPECT_EQ(c.remaining(), 0u);
  EXPECT_EQ(c.next(), std::nullopt);
  EXPECT_EQ(statuses(c.rows()), (std::vector<SweepStatus>{SweepStatus::kSimulated, SweepStatus::kSimulated,
                                                          SweepStatus::kSimulated, SweepStatus::kScreened}));
}

}  // namespace
}  // namespace megasim::scenarios
