// The writing half of binary_trace.h: the layout there, field by field, with the checksum taken of
// the bytes as they go out.
#include <fmt/format.h>

#include <ostream>
#include <string>
#include <vector>

#include "scenarios/config/embedded_scenario.h"
#include "scenarios/trace/binary_trace.h"
#include "sim/error.h"
#include "sim/fnv1a.h"

namespace megasim::scenarios {
namespace {

// Appends little-endian fixed-width integers to a buffer that goes out, and into the checksum, in
// pieces (one unit's records at a time: a unit of the 175B plan has thousands of tasks).
class BinaryOut {
 public:
  explicit BinaryOut(std::ostream& out) : out_(out) {}

  void u32(std::uint32_t x) { little_endian(x, 4); }
  void u64(std::uint64_t x) { little_endian(x, 8); }
  void i32(std::int32_t x) { u32(static_cast<std::uint32_t>(x)); }
  void i64(std::int64_t x) { u64(static_cast<std::uint64_t>(x)); }
  void bytes(std::string_view b) { buffer_.append(b); }
  // A u64 length, then the bytes.
  void text(std::string_view b) {
    u64(b.size());
    bytes(b);
  }

  // Sends the buffer on and into the checksum.
  void flush() {
    checksum_.add(buffer_);
    out_.write(buffer_.data(), static_cast<std::streamsize>(buffer_.size()));
    buffer_.clear();
  }
  // The checksum of every byte flushed, itself not counted.
  void finish() {
    flush();
    const std::uint64_t sum = checksum_.value();
    u64(sum);
    out_.write(buffer_.data(), static_cast<std::streamsize>(buffer_.size()));
    buffer_.clear();
  }

 private:
  void little_endian(std::uint64_t x, int width) {
    for (int i = 0; i < width; ++i) buffer_.push_back(static_cast<char>((x >> (8 * i)) & 0xFFU));
  }

  std::ostream& out_;
  std::string buffer_;
  sim::Fnv1a64 checksum_;
};

}  // namespace

bool is_binary_trace(std::string_view bytes) {
  return bytes.substr(0, kBinaryTraceMagic.size()) == kBinaryTraceMagic;
}

void write_binary_trace(std::ostream& out, const models::Workload& workload, const backend::Trace& trace,
                        const TraceFilter& filter, const Scenario& scenario) {
  const std::vector<WrittenUnit> units = written_units(workload, trace, filter);
  const std::string keys = scenario_keys_json(scenario);
  if (keys.size() > kMaxScenarioBytes) {
    throw sim::ConfigError(fmt::format("the scenario's keys take {} bytes of JSON; trace.bin holds at most {}",
                                       keys.size(), kMaxScenarioBytes));
  }
  BinaryOut w(out);
  w.bytes(kBinaryTraceMagic);
  w.u32(kBinaryTraceVersion);
  w.u32(0);  // flags
  w.i64(trace.iteration_time);
  MEGASIM_ASSERT(!trace.backend.empty() && trace.backend.size() <= kMaxBackendNameBytes, "backend name length");
  w.text(trace.backend);
  w.text(keys);
  w.u64(units.size());
  for (const WrittenUnit& written : units) {
    const backend::TraceUnit& unit = trace.units[written.unit];
    MEGASIM_ASSERT(unit.stage >= 0 && static_cast<std::size_t>(unit.stage) < workload.stages.size() &&
                       unit.records.size() == workload.stages[static_cast<std::size_t>(unit.stage)].tasks.size(),
                   "trace unit does not match the workload");
    w.i32(unit.stage);
    w.i32(unit.replica);
    w.u64(written.ranks.size());
    for (const std::int64_t rank : written.ranks) w.i64(rank);
    w.u64(unit.records.size());
    for (const backend::TaskRecord& r : unit.records) {
      w.i64(r.start);
      w.i64(r.transfer_start);
      w.i64(r.end);
      w.i64(r.tp_exposed);
    }
    w.flush();
  }
  w.finish();
}

}  // namespace megasim::scenarios
