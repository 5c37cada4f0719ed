// The reading half of binary_trace.h: one pass from the magic to the checksum, every count checked
// against the bytes left and against the embedded scenario's plan before anything is allocated.
#include <fmt/format.h>

#include <string>
#include <vector>

#include "scenarios/config/embedded_scenario.h"
#include "scenarios/config/json_reader.h"
#include "scenarios/trace/binary_trace.h"
#include "sim/error.h"
#include "sim/fnv1a.h"

namespace megasim::scenarios {
namespace {

constexpr std::uint64_t kRecordBytes = 32;  // start, transfer_start, end, tp_exposed
// The smallest unit: stage, replica, a rank count, one rank, a record count (a stage has tasks, but
// the count is checked against the plan later).
constexpr std::uint64_t kMinUnitBytes = 4 + 4 + 8 + 8 + 8;

std::uint64_t little_endian(std::string_view b) {
  std::uint64_t x = 0;
  for (std::size_t i = b.size(); i-- > 0;) x = (x << 8U) | static_cast<std::uint8_t>(b[i]);
  return x;
}

// The bytes of one binary trace, consumed front to back; the checksum follows what was consumed.
class BinaryIn {
 public:
  BinaryIn(std::string_view bytes, std::string_view source, const std::function<void(std::size_t)>& consumed)
      : bytes_(bytes), source_(source), consumed_(consumed) {}

  [[noreturn]] void fail_at(std::size_t offset, const std::string& expected) const {
    throw sim::ConfigError(fmt::format("{}: byte {}: expected {}", source_, offset, expected));
  }

  [[nodiscard]] std::size_t offset() const { return at_; }
  [[nodiscard]] std::uint64_t left() const { return bytes_.size() - at_; }

  // The next `n` bytes, which hold `what`.
  std::string_view take(std::uint64_t n, std::string_view what) {
    if (n > left()) {
      fail_at(at_,
              fmt::format("{} ({} bytes), found the end of the file after {}: the file is truncated", what, n, left()));
    }
    const std::string_view b = bytes_.substr(at_, static_cast<std::size_t>(n));
    at_ += static_cast<std::size_t>(n);
    return b;
  }
  std::uint32_t u32(std::string_view what) { return static_cast<std::uint32_t>(little_endian(take(4, what))); }
  std::uint64_t u64(std::string_view what) { return little_endian(take(8, what)); }
  std::int64_t i64(std::string_view what) { return static_cast<std::int64_t>(u64(what)); }
  std::int32_t i32(std::string_view what) { return static_cast<std::int32_t>(u32(what)); }

  // A u64 count of `what` in [low, high] (`bounds` says why), each item `item_bytes` long, all of
  // them within the bytes left.
  std::uint64_t count(std::string_view what, std::uint64_t low, std::uint64_t high, std::string_view bounds,
                      std::uint64_t item_bytes) {
    const std::size_t at = at_;
    const std::uint64_t n = u64(fmt::format("the count of {}", what));
    if (n < low || n > high) {
      const std::string range = low == high ? std::to_string(low) : fmt::format("{} to {}", low, high);
      fail_at(at, fmt::format("{} {} ({}), found {}", range, what, bounds, n));
    }
    if (n > left() / item_bytes) {
      fail_at(at, fmt::format("a count of {} that fits the {} bytes left, found {} ({} bytes each): the file is "
                              "truncated or corrupt",
                              what, left(), n, item_bytes));
    }
    return n;
  }

  // A signed integer in [low, high] read at the offset it was read from.
  std::int64_t checked(std::int64_t x, std::size_t at, std::int64_t low, std::int64_t high,
                       std::string_view what) const {
    if (x < low || x > high) fail_at(at, fmt::format("{} ({} to {}), found {}", what, low, high, x));
    return x;
  }

  // Adds the bytes read since the last call to the checksum and tells `consumed`.
  void progress() {
    checksum_.add(bytes_.substr(hashed_, at_ - hashed_));
    hashed_ = at_;
    if (consumed_) consumed_(at_);
  }

  // The checksum of every byte before it, then the end of the file.
  void finish() {
    progress();
    const std::size_t at = at_;
    const std::uint64_t stored = u64("the checksum");
    if (stored != checksum_.value()) {
      fail_at(at, fmt::format("the checksum {:#018x} of the bytes before it, found {:#018x}: the file is corrupt",
                              checksum_.value(), stored));
    }
    if (left() != 0) fail_at(at_, fmt::format("the end of the file after the checksum, found {} more bytes", left()));
  }

 private:
  std::string_view bytes_;
  std::string_view source_;
  const std::function<void(std::size_t)>& consumed_;
  std::size_t at_ = 0;
  std::size_t hashed_ = 0;
  sim::Fnv1a64 checksum_;
};

void header(BinaryIn& in) {
  if (in.take(kBinaryTraceMagic.size(), "the magic bytes \\x89MSTRACE") != kBinaryTraceMagic) {
    in.fail_at(0,
               "the magic bytes \\x89MSTRACE of a megasim binary trace (trace.bin, written by megasim run --out DIR)");
  }
  std::size_t at = in.offset();
  const std::uint32_t version = in.u32("the format version");
  if (version != kBinaryTraceVersion) {
    in.fail_at(at,
               fmt::format("format version {}, found {} (written by another megasim?)", kBinaryTraceVersion, version));
  }
  at = in.offset();
  const std::uint32_t flags = in.u32("the flags");
  if (flags != 0) in.fail_at(at, fmt::format("flags 0 (version {} defines none), found {}", version, flags));
}

// The embedded scenario and the workload rebuilt from it.
void scenario(BinaryIn& in, std::string_view source, TraceFile& f) {
  const std::size_t at = in.offset();
  const std::uint64_t length =
      in.count("scenario bytes", 1, kMaxScenarioBytes, "a trace is written with its scenario's keys", 1);
  const std::string_view text = in.take(length, "the scenario's keys");
  const JsonValue keys = parse_json(text, fmt::format("{} (the scenario at byte {})", source, at + 8));
  if (keys.kind != JsonValue::Kind::kObject) in.fail_at(at + 8, "the scenario's keys as a JSON object");
  try {
    f.scenario = scenario_from_keys(keys, source);
    f.workload = recorded_workload(f.scenario);
  } catch (const sim::ConfigError& e) {
    throw sim::ConfigError(fmt::format("{}: byte {}: the embedded scenario: {}", source, at + 8, e.what()));
  }
}

void records(BinaryIn& in, backend::TraceUnit& unit, std::uint64_t tasks) {
  in.count(fmt::format("records of stage {}", unit.stage), tasks, tasks, "one per task of its program", kRecordBytes);
  const std::size_t first = in.offset();
  const std::string_view b = in.take(tasks * kRecordBytes, "the records");
  unit.records.resize(static_cast<std::size_t>(tasks));
  for (std::size_t i = 0; i < unit.records.size(); ++i) {
    sim::SimTime* fields[] = {&unit.records[i].start, &unit.records[i].transfer_start, &unit.records[i].end,
                              &unit.records[i].tp_exposed};
    for (std::size_t k = 0; k < 4; ++k) {
      const std::size_t at = i * kRecordBytes + k * 8;
      const auto t = static_cast<std::int64_t>(little_endian(b.substr(at, 8)));
      *fields[k] = in.checked(t, first + at, -kMaxBinaryTraceTimeNs, kMaxBinaryTraceTimeNs, "a time in ns");
    }
  }
}

backend::TraceUnit unit(BinaryIn& in, const TraceFile& f) {
  const models::Workload& w = f.workload;
  const std::int64_t gpus = f.scenario.cluster.gpus;
  backend::TraceUnit u;
  std::size_t at = in.offset();
  u.stage = static_cast<std::int32_t>(in.checked(
      in.i32("a unit's stage"), at, 0, static_cast<std::int64_t>(w.stages.size()) - 1, "a stage of the plan"));
  at = in.offset();
  u.replica = static_cast<std::int32_t>(
      in.checked(in.i32("a unit's replica"), at, 0, w.plan.replicas() - 1, "a data-parallel replica of the plan"));
  const std::uint64_t ranks = in.count("ranks in a unit", 1, static_cast<std::uint64_t>(gpus),
                                       fmt::format("ranks of the scenario's {} GPUs", gpus), 8);
  u.ranks.reserve(static_cast<std::size_t>(ranks));
  for (std::uint64_t i = 0; i < ranks; ++i) {
    at = in.offset();
    u.ranks.push_back(in.checked(in.i64("a rank"), at, 0, gpus - 1, "a rank of the scenario's GPUs"));
  }
  records(in, u, w.stages[static_cast<std::size_t>(u.stage)].tasks.size());
  return u;
}

}  // namespace

TraceFile parse_binary_trace(std::string_view bytes, std::string_view source,
                             const std::function<void(std::size_t)>& consumed) {
  BinaryIn in(bytes, source, consumed);
  header(in);
  TraceFile f;
  std::size_t at = in.offset();
  f.trace.iteration_time =
      in.checked(in.i64("the iteration time"), at, 0, kMaxBinaryTraceTimeNs, "an iteration time in ns");
  const std::uint64_t name = in.count("backend name bytes", 1, kMaxBackendNameBytes, "a backend's name", 1);
  f.trace.backend = std::string(in.take(name, "the backend's name"));
  scenario(in, source, f);
  const auto gpus = static_cast<std::uint64_t>(f.scenario.cluster.gpus);
  const std::uint64_t units =
      in.count("units", 0, gpus, fmt::format("each holds ranks of the scenario's {} GPUs", gpus), kMinUnitBytes);
  f.trace.units.reserve(static_cast<std::size_t>(units));
  for (std::uint64_t i = 0; i < units; ++i) {
    f.trace.units.push_back(unit(in, f));
    in.progress();
  }
  in.finish();
  return f;
}

}  // namespace megasim::scenarios
