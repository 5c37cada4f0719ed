#include "scenarios/trace/trace_events.h"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "models/workload.h"
#include "scenarios/config/json_dom_builder.h"
#include "scenarios/config/json_sax.h"
#include "scenarios/report/perfetto_tracks.h"

namespace megasim::scenarios {
namespace {

using Kind = JsonValue::Kind;

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
      if (!equal(known_[i], key)) continue;
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
  // Byte by byte, inline: the keys are short and most differ in their length or first byte (where
  // std::string_view's == calls memcmp, the reader's hottest call).
  static bool equal(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (a[i] != b[i]) return false;
    }
    return true;
  }

  std::vector<std::string_view> known_;  // at most 32
  std::uint32_t bits_ = 0;
  std::vector<std::string> others_;
  std::size_t size_ = 0;
};

// The members the reader decodes, by their index in the KeySets below.
enum TopKey { kTraceEvents, kMegasim };
enum EventKey { kPh, kPid, kTid, kTs, kDur, kArgs, kEventFields };
enum ArgsKey { kTask, kTpExposedUs, kPostedUs, kArgsFields };

// What an open array or object is to the reader: the document, its "traceEvents" array, an event
// of it, the event's args, the "megasim" value (built as a DOM), or anything else (checked only).
enum class Role : std::uint8_t { kTop, kEvents, kEvent, kArgs, kMegasim, kSkip };

sim::SimTime ns(double us) {
  return static_cast<sim::SimTime>(std::llround(us * 1e3));
}

// RapidJSON's events of a whole trace (json_sax.h), turned into TraceEvents as they come.
class EventHandler : public JsonHandler<EventHandler> {
 public:
  EventHandler(const JsonText& text, const std::function<void(std::size_t)>& consumed)
      : JsonHandler(text), consumed_(consumed) {}

  bool Null() {
    if (in_megasim()) return megasim_value(JsonValue());
    return scalar({.present = true, .kind = Kind::kNull});
  }
  bool Bool(bool b) {
    if (in_megasim()) {
      JsonValue v;
      v.kind = Kind::kBool;
      v.boolean = b;
      return megasim_value(std::move(v));
    }
    return scalar({.present = true, .kind = Kind::kBool});
  }
  bool Number(double x) {
    if (in_megasim()) {
      JsonValue v;
      v.kind = Kind::kNumber;
      v.number = x;
      return megasim_value(std::move(v));
    }
    return scalar({.present = true, .kind = Kind::kNumber, .number = x});
  }
  bool String(const char* text, rapidjson::SizeType length, bool /*copy*/) {
    if (in_megasim()) {
      JsonValue v;
      v.kind = Kind::kString;
      v.text.assign(text, length);
      return megasim_value(std::move(v));
    }
    return scalar({.present = true, .kind = Kind::kString, .is_x = length == 1 && text[0] == 'X'});
  }
  bool StartObject() { return open(Kind::kObject); }
  bool StartArray() { return open(Kind::kArray); }
  bool Key(const char* text, rapidjson::SizeType length, bool /*copy*/);
  bool EndObject(rapidjson::SizeType /*members*/) { return close(); }
  bool EndArray(rapidjson::SizeType /*items*/) { return close(); }

  TraceEvents take() {
    out_.events.finish();
    return std::move(out_);
  }

 private:
  struct Open {
    Role role;
    Kind kind;        // kArray or kObject
    int member = -1;  // an object's member being read: its index in the object's KeySet
  };

  // Whether the value that comes is (part of) the "megasim" member.
  [[nodiscard]] bool in_megasim() const {
    if (open_.empty()) return false;
    const Open& top = open_.back();
    return top.role == Role::kMegasim || (top.role == Role::kTop && top.member == kMegasim);
  }
  // The field of an event or its args that the value that comes fills; nullptr for none.
  Field* slot() {
    if (open_.empty()) return nullptr;
    const Open& top = open_.back();
    if (top.role == Role::kEvent && top.member >= 0 && top.member < kEventFields)
      return &event_[static_cast<std::size_t>(top.member)];
    if (top.role == Role::kArgs && top.member >= 0 && top.member < kArgsFields)
      return &args_[static_cast<std::size_t>(top.member)];
    return nullptr;
  }

  bool scalar(const Field& f) {
    if (Field* s = slot()) *s = f;
    return value_done();
  }
  bool megasim_value(JsonValue v) {
    builder_.value(std::move(v));
    if (builder_.done()) out_.megasim = builder_.take();
    return value_done();
  }
  // A value ended; an element of "traceEvents" counts towards the next progress report.
  bool value_done() {
    if (!open_.empty() && open_.back().role == Role::kEvents && ++elements_ % kEventsPerReport == 0 && consumed_) {
      consumed_(offset());
    }
    return true;
  }

  bool open(Kind kind);
  bool close();
  bool end_event();

  // An error at the event being read ("SOURCE:LINE:COLUMN: an event has no valid ..."): false.
  bool fail_event(const std::string& what) { return fail(fmt::format("{}: {}", text_.where(event_at_), what)); }
  bool number_of(const Field& f, std::string_view where, std::string_view key, double& x) {
    if (!f.present || f.kind != Kind::kNumber) return fail_event(fmt::format("{} has no valid \"{}\"", where, key));
    x = f.number;
    return true;
  }
  bool integer_of(const Field& f, std::string_view where, std::string_view key, std::int64_t& i) {
    double x = 0;
    if (!number_of(f, where, key, x)) return false;
    const std::optional<std::int64_t> whole = exact_integer(x);
    if (!whole) return fail_event(fmt::format("{}.{} is not an integer", where, key));
    i = *whole;
    return true;
  }

  const std::function<void(std::size_t)>& consumed_;
  TraceEvents out_;
  std::vector<Open> open_;  // innermost last
  JsonDomBuilder builder_;  // the "megasim" value
  std::size_t elements_ = 0;
  std::size_t event_at_ = 0;               // the offset of the event being read
  std::array<Field, kEventFields> event_;  // by EventKey
  std::array<Field, kArgsFields> args_;    // by ArgsKey
  // The decoded keys first, in the order of the enums above; then the others megasim writes.
  KeySet top_keys_{"traceEvents", "megasim", "displayTimeUnit"};
  KeySet event_keys_{"ph", "pid", "tid", "ts", "dur", "args", "name", "cat", "id", "bp"};
  KeySet args_keys_{"task",  "tp_exposed_us", "posted_us", "stage",     "microbatch",
                    "chunk", "bytes",         "calls",     "exposed_us"};
};

bool EventHandler::Key(const char* text, rapidjson::SizeType length, bool /*copy*/) {
  const std::string_view key(text, length);
  Open& top = open_.back();
  switch (top.role) {
    case Role::kTop:
      top.member = top_keys_.insert(key);
      break;
    case Role::kEvent:
      top.member = event_keys_.insert(key);
      break;
    case Role::kArgs:
      top.member = args_keys_.insert(key);
      break;
    case Role::kMegasim:
      return builder_.key(key) || duplicate(key);
    default:
      return new_key(key);
  }
  return top.member >= 0 || duplicate(key);
}

bool EventHandler::open(Kind kind) {
  if (!open_container()) return false;
  Role role = Role::kSkip;
  if (open_.empty()) {
    if (kind == Kind::kObject) role = Role::kTop;  // another document is checked, and has no "megasim"
  } else {
    const Open& top = open_.back();
    if (top.role == Role::kTop && top.member == kTraceEvents && kind == Kind::kArray) {
      role = Role::kEvents;
      out_.has_event_array = true;
    } else if (in_megasim()) {
      role = Role::kMegasim;
    } else if (top.role == Role::kEvents && kind == Kind::kObject) {
      role = Role::kEvent;
    } else if (top.role == Role::kEvent && top.member == kArgs && kind == Kind::kObject) {
      role = Role::kArgs;
    }
    // A field's value that is an array or object: checked, its kind kept (args: its members too).
    if (Field* s = slot()) *s = {.present = true, .kind = kind};
  }
  switch (role) {
    case Role::kTop:
      top_keys_.clear();
      break;
    case Role::kEvent:
      event_at_ = bracket_offset();
      event_keys_.clear();
      args_keys_.clear();
      for (Field& f : event_) f = {};
      for (Field& f : args_) f = {};
      break;
    case Role::kMegasim:
      builder_.open(kind);
      break;
    case Role::kSkip:
      if (kind == Kind::kObject) open_keys();
      break;
    default:
      break;
  }
  open_.push_back({role, kind});
  return true;
}

bool EventHandler::close() {
  close_container();
  const Open closed = open_.back();
  open_.pop_back();
  switch (closed.role) {
    case Role::kEvent:
      if (!end_event()) return false;
      break;
    case Role::kMegasim:
      builder_.close();
      if (builder_.done()) out_.megasim = builder_.take();
      break;
    case Role::kSkip:
      if (closed.kind == Kind::kObject) close_keys();
      break;
    default:
      break;
  }
  return value_done();
}

// The checks of trace_events.h on an event read whole, and its record.
bool EventHandler::end_event() {
  if (!event_[kPh].is_x) return true;
  std::int64_t pid = 0;
  std::int64_t tid = 0;
  if (!integer_of(event_[kPid], "an event", "pid", pid) || !integer_of(event_[kTid], "an event", "tid", tid)) {
    return false;
  }
  if (stream_of_tid(tid) == models::StreamKind::kTp) return true;
  if (event_[kArgs].kind != Kind::kObject) return fail_event("an event has no valid \"args\"");
  TraceEvent e;
  double begin = 0;
  double length = 0;
  if (!integer_of(args_[kTask], "an event's args", "task", e.task) ||
      !number_of(event_[kTs], "an event", "ts", begin) || !number_of(event_[kDur], "an event", "dur", length)) {
    return false;
  }
  e.transfer_start = ns(begin);
  e.end = ns(begin + length);
  const Field& tp_exposed = args_[kTpExposedUs];
  e.has_tp_exposed = tp_exposed.present && tp_exposed.kind == Kind::kNumber;
  if (e.has_tp_exposed) e.tp_exposed = ns(tp_exposed.number);
  const Field& posted = args_[kPostedUs];
  e.has_posted = posted.present && posted.kind == Kind::kNumber;
  if (e.has_posted) e.posted = ns(posted.number);
  out_.events.add(pid, e);
  return true;
}

}  // namespace

TraceEvents read_trace_events(std::string_view text, std::string_view source,
                              const std::function<void(std::size_t)>& consumed) {
  const JsonText in(text, source);
  EventHandler handler(in, consumed);
  parse_json_text(in, handler);
  return handler.take();
}

}  // namespace megasim::scenarios
