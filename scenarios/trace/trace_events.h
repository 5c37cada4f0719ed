// The streaming half of the trace reader (trace_file.h): one pass over the text of a Perfetto
// trace written by perfetto_trace.h that keeps its "megasim" object as a DOM (it is small) and
// decodes every event of "traceEvents" straight into a compact record, so a trace of 12,288 ranks
// (GBs of JSON) is read without a document tree. RapidJSON's SAX reader does the tokenizing, and
// the whole text is checked as strict JSON with the same checks and errors as json_reader.h's
// (json_sax.h); top-level members may come in any order.
//
// An event counts when it is an object with "ph":"X"; others (the "M" metadata events, the flow
// events, anything else) are only checked as JSON. A counted event needs an integer pid and tid and,
// unless its tid is on the tp stream (tid % 4 == 1, perfetto_tracks.h: it only repeats a compute
// task's span), numbers ts and dur and an args
// object with an integer task; an event without them is an error "SOURCE:LINE:COLUMN: an event has
// no valid "ts"" naming where the event begins. args.tp_exposed_us and args.posted_us are
// optional here: which one a task needs depends on its kind, which trace_file.h checks.
#pragma once

#include <cstddef>
#include <functional>
#include <string_view>

#include "scenarios/config/json_reader.h"
#include "scenarios/trace/trace_event_store.h"

namespace megasim::scenarios {

struct TraceEvents {
  JsonValue megasim;             // the "megasim" member; kind kNull when the document has none
  bool has_event_array = false;  // the document has a "traceEvents" array
  EventsByPid events;            // finished
};

// Reads `text` in one pass. `consumed`, when given, is called now and then with how many bytes of
// the text have been read; the reader does not look at them again unless it reports an error (a
// mapped file can drop them from memory). Throws sim::ConfigError for malformed JSON
// ("SOURCE:LINE:COLUMN: expected ..., found ...", as parse_json) and for counted events without
// what they need (see above).
TraceEvents read_trace_events(std::string_view text, std::string_view source,
                              const std::function<void(std::size_t)>& consumed = {});

}  // namespace megasim::scenarios
