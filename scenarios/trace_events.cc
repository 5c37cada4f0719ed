#include "scenarios/trace_events.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "models/workload.h"
#include "scenarios/json_lexer.h"
#include "scenarios/perfetto_tracks.h"
#include "sim/error.h"

namespace megasim::scenarios {
namespace {

using Kind = JsonValue::Kind;

// Nesting depths as parse_json counts them: a member of the document (traceEvents, megasim), an
// event, its args.
constexpr int kMemberDepth = 1;
constexpr int kEventDepth = 2;
constexpr int kArgsDepth = 3;

// How often (in events) the reader reports its progress to `consumed`.
constexpr std::size_t kEventsPerReport = 1 << 14;

// A member value as far as an event's checks need it: its kind, and its number or whether it is the
// string "X".
struct Field {
  bool present = false;
  Kind kind = Kind::kNull;
  double number = 0;
  bool is_x = false;
};

// The keys of one object read so far, for the duplicate-key check. The keys such an object usually
// has (`known`) are found by their index and remembered as bits; others are kept as strings.
class KeySet {
 public:
  explicit KeySet(std::initializer_list<std::string_view> known) : known_(known) {}
  void clear() {
    bits_ = 0;
    size_ = 0;
  }
  // The index of `key` among the known keys (known.size() for another key); -1 when the set has it.
  int insert(std::string_view key) {
    for (std::size_t i = 0; i < known_.size(); ++i) {
      if (known_[i] != key) continue;
      if ((bits_ >> i) & 1U) return -1;
      bits_ |= 1U << i;
      return static_cast<int>(i);
    }
    for (std::size_t i = 0; i < size_; ++i) {
      if (others_[i] == key) return -1;
    }
    if (size_ == others_.size()) others_.emplace_back();
    others_[size_++].assign(key);
    return static_cast<int>(known_.size());
  }

 private:
  std::vector<std::string_view> known_;  // at most 32
  std::uint32_t bits_ = 0;
  std::vector<std::string> others_;
  std::size_t size_ = 0;
};

// The members the reader decodes, by their index in the KeySets below.
enum TopKey { kTraceEvents, kMegasim };
enum EventKey { kPh, kPid, kTid, kTs, kDur, kArgs };
enum ArgsKey { kTask, kTpExposedUs, kPostedUs };

sim::SimTime ns(double us) {
  return static_cast<sim::SimTime>(std::llround(us * 1e3));
}

class EventReader {
 public:
  EventReader(std::string_view text, std::string_view source, const std::function<void(std::size_t)>& consumed)
      : in_(text, source), consumed_(consumed) {}

  TraceEvents document() {
    TraceEvents out;
    if (in_.peek() != '{') {
      parse_json_value(in_, 0);  // not an object: the JSON checked, no "megasim" to be found
    } else {
      in_.advance();
      for (bool first = true; in_.next_element('}', first);) {
        const int key = member_key(top_keys_);
        if (key == kTraceEvents && in_.peek() == '[') {
          events(out.events);
          out.has_event_array = true;
        } else if (key == kMegasim) {
          out.megasim = parse_json_value(in_, kMemberDepth);
        } else {
          skip(kMemberDepth);
        }
      }
    }
    if (!in_.at_end()) in_.fail("the end of the document");
    out.events.finish();
    return out;
  }

 private:
  // The next member's key and its ':', checked against `seen` (the object's keys so far, cleared
  // by the caller): the key's index in `seen`'s known keys.
  int member_key(KeySet& seen) {
    const std::size_t at = in_.member_key(key_);
    const int index = seen.insert(key_);
    if (index < 0) in_.fail_at(at, fmt::format("a key other than the duplicate \"{}\"", key_));
    in_.expect(':', "':'");
    return index;
  }

  // Checks and drops the value at the lexer, `depth` deep.
  void skip(int depth) {
    const char c = in_.peek();
    if (c == '"') {
      in_.string(scratch_);
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      in_.number();
    } else {
      parse_json_value(in_, depth);
    }
  }

  // A scalar member's value, `depth` deep; containers are checked and reported by kind only.
  Field field(int depth) {
    Field f;
    f.present = true;
    switch (in_.peek()) {
      case '"':
        in_.string(scratch_);
        f.kind = Kind::kString;
        f.is_x = scratch_ == "X";
        return f;
      case '{':
      case '[':
      case 't':
      case 'f':
      case 'n':
        f.kind = parse_json_value(in_, depth).kind;
        return f;
      default:
        f.kind = Kind::kNumber;
        f.number = in_.number();
        return f;
    }
  }

  void events(EventsByPid& store) {
    in_.advance();
    std::size_t count = 0;
    for (bool first = true; in_.next_element(']', first);) {
      event(store);
      if (++count % kEventsPerReport == 0 && consumed_) consumed_(in_.offset());
    }
  }

  struct Args {
    Field object;  // kind kObject when args is an object
    Field task, tp_exposed_us, posted_us;
  };

  void event(EventsByPid& store) {
    if (in_.peek() != '{') {
      skip(kEventDepth);
      return;
    }
    const std::size_t at = in_.offset();
    in_.advance();
    Field ph, pid, tid, ts, dur;
    Args args;
    event_keys_.clear();
    for (bool first = true; in_.next_element('}', first);) {
      switch (member_key(event_keys_)) {
        case kPh:
          ph = field(kEventDepth + 1);
          break;
        case kPid:
          pid = field(kEventDepth + 1);
          break;
        case kTid:
          tid = field(kEventDepth + 1);
          break;
        case kTs:
          ts = field(kEventDepth + 1);
          break;
        case kDur:
          dur = field(kEventDepth + 1);
          break;
        case kArgs:
          read_args(args);
          break;
        default:
          skip(kEventDepth + 1);
      }
    }
    if (!ph.is_x) return;
    const std::int64_t p = integer(at, pid, "an event", "pid");
    if (stream_of_tid(integer(at, tid, "an event", "tid")) == models::StreamKind::kTp) return;
    if (args.object.kind != Kind::kObject) fail(at, "an event has no valid \"args\"");
    TraceEvent e;
    e.task = integer(at, args.task, "an event's args", "task");
    const double begin = number(at, ts, "an event", "ts");
    const double length = number(at, dur, "an event", "dur");
    e.transfer_start = ns(begin);
    e.end = ns(begin + length);
    e.has_tp_exposed = args.tp_exposed_us.present && args.tp_exposed_us.kind == Kind::kNumber;
    if (e.has_tp_exposed) e.tp_exposed = ns(args.tp_exposed_us.number);
    e.has_posted = args.posted_us.present && args.posted_us.kind == Kind::kNumber;
    if (e.has_posted) e.posted = ns(args.posted_us.number);
    store.add(p, e);
  }

  void read_args(Args& args) {
    if (in_.peek() != '{') {
      args.object = field(kEventDepth + 1);
      return;
    }
    in_.advance();
    args.object.present = true;
    args.object.kind = Kind::kObject;
    args_keys_.clear();
    for (bool first = true; in_.next_element('}', first);) {
      switch (member_key(args_keys_)) {
        case kTask:
          args.task = field(kArgsDepth + 1);
          break;
        case kTpExposedUs:
          args.tp_exposed_us = field(kArgsDepth + 1);
          break;
        case kPostedUs:
          args.posted_us = field(kArgsDepth + 1);
          break;
        default:
          skip(kArgsDepth + 1);
      }
    }
  }

  [[noreturn]] void fail(std::size_t at, const std::string& what) const {
    throw sim::ConfigError(fmt::format("{}: {}", in_.where(at), what));
  }

  double number(std::size_t at, const Field& f, std::string_view where, std::string_view key) const {
    if (!f.present || f.kind != Kind::kNumber) fail(at, fmt::format("{} has no valid \"{}\"", where, key));
    return f.number;
  }

  std::int64_t integer(std::size_t at, const Field& f, std::string_view where, std::string_view key) const {
    const double x = number(at, f, where, key);
    if (x != std::floor(x) || std::fabs(x) > 9e15) fail(at, fmt::format("{}.{} is not an integer", where, key));
    return static_cast<std::int64_t>(x);
  }

  JsonLexer in_;
  const std::function<void(std::size_t)>& consumed_;
  std::string key_;
  std::string scratch_;
  // The decoded keys first, in the order of the enums above; then the others megasim writes.
  KeySet top_keys_{"traceEvents", "megasim", "displayTimeUnit"};
  KeySet event_keys_{"ph", "pid", "tid", "ts", "dur", "args", "name", "cat", "id", "bp"};
  KeySet args_keys_{"task",  "tp_exposed_us", "posted_us", "stage",     "microbatch",
                    "chunk", "bytes",         "calls",     "exposed_us"};
};

}  // namespace

TraceEvents read_trace_events(std::string_view text, std::string_view source,
                              const std::function<void(std::size_t)>& consumed) {
  return EventReader(text, source, consumed).document();
}

}  // namespace megasim::scenarios
