// trace.bin: the recorded iteration of `megasim run --out DIR` in a compact binary file, next to
// trace.json and holding exactly what `megasim whatif` reads back (trace_file.h TraceFile): the
// embedded scenario, the backend, the iteration time and each written unit's ranks, stage, replica
// and task records. trace.json of a 12,288-GPU run with every rank is GBs of text;
// trace.bin keeps one copy of each unit's records (a tensor-parallel group is one unit) at 32 bytes
// a record, and reads back without a JSON parse.
//
// Layout, version 1. Integers are little-endian, fixed width; times (sim::SimTime) are int64 ns.
//   magic            8 bytes  "\x89MSTRACE" (0x89: not text, so no JSON or TOML file begins so)
//   version          u32      1
//   flags            u32      0 (reserved; a reader refuses others)
//   iteration_time   i64      ns, 0 to kMaxBinaryTraceTimeNs
//   backend          u64 length (1 to kMaxBackendNameBytes), then that many bytes
//   scenario         u64 length (1 to kMaxScenarioBytes), then the scenario's keys as one JSON
//                    object (embedded_scenario.h: the object trace.json's "megasim".scenario holds)
//   units            u64 count (at most the scenario's GPUs), then per unit:
//     stage          i32      pipeline stage, 0 to the plan's stages - 1
//     replica        i32      data-parallel replica, 0 to dp - 1
//     ranks          u64 count (1 to the GPUs), then that many i64 global ranks (0 to GPUs - 1)
//     records        u64 count (= the tasks of the stage's program), then per task, in program
//                    order: start, transfer_start, end, tp_exposed (4 x i64 ns, backend/trace.h),
//                    each within +-kMaxBinaryTraceTimeNs
//   checksum         u64      FNV-1a (64-bit) of every byte before it; then the end of the file
// The units and ranks are those trace.json's "megasim".units lists for the same filter
// (perfetto_trace.h written_units), in the same order, so both files read back to the same TraceFile.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string_view>

#include "backend/trace.h"
#include "models/workload.h"
#include "scenarios/config/scenario.h"
#include "scenarios/report/perfetto_trace.h"
#include "scenarios/trace/trace_file.h"

namespace megasim::scenarios {

inline constexpr std::string_view kBinaryTraceMagic = "\x89MSTRACE";
inline constexpr std::uint32_t kBinaryTraceVersion = 1;
// Bounds a reader checks before it allocates. The scenario object of keys.h is about 8 KB; only
// long strings (names, paths) make it larger.
inline constexpr std::uint64_t kMaxScenarioBytes = std::uint64_t{16} << 20;
inline constexpr std::uint64_t kMaxBackendNameBytes = 256;
// 2^53 ns (104 days): the times trace.json's microsecond doubles still hold to the nanosecond.
inline constexpr std::int64_t kMaxBinaryTraceTimeNs = std::int64_t{1} << 53;

// Whether `bytes` begin with the magic (the rest may still be malformed).
bool is_binary_trace(std::string_view bytes);

// Writes the units `filter` selects (as trace.json's) with `scenario` embedded. Throws, before
// writing anything, as selected_ranks for a bad filter and sim::ConfigError for a scenario whose
// keys take more than kMaxScenarioBytes. Preconditions (asserted): the trace's
// units match the workload; `scenario` is the one the workload was built from.
void write_binary_trace(std::ostream& out, const models::Workload& workload, const backend::Trace& trace,
                        const TraceFilter& filter, const Scenario& scenario);

// Reads a binary trace in one front-to-back pass: memory grows with the records kept, not with the
// bytes (`consumed`, when given, is told now and then how many bytes are read and will not be looked
// at again: a mapped file can drop them). Throws sim::ConfigError "SOURCE: byte N: expected ..."
// naming the offset of the first byte that is not what the format allows (a wrong magic or version,
// a count beyond the bytes left or beyond the scenario's plan, a rank, stage or replica outside it,
// a time out of bounds, a checksum mismatch, bytes after the checksum), and as scenario_from_keys
// and resolve_plan for the embedded scenario.
TraceFile parse_binary_trace(std::string_view bytes, std::string_view source,
                             const std::function<void(std::size_t)>& consumed = {});

}  // namespace megasim::scenarios
