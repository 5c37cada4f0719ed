// The layer under megasim's strict JSON readers (RFC 8259): RapidJSON's SAX reader
// (rapidjson::Reader, Debian's rapidjson-dev 1.1) does the tokenizing over a text held in memory (a
// string or a mapped file), and this file adds what both readers (json_reader.h, trace_events.h)
// check on top of it, in the same words at the same place:
//   - errors "SOURCE:LINE:COLUMN: expected <what>, found <the byte there | the end of the input>",
//     line and column 1-based, the column counted in bytes, RapidJSON's error codes mapped to those
//     phrases and its offsets moved to the byte the phrase is about (JsonText::syntax_error);
//   - nesting at most kMaxJsonDepth deep, duplicate keys refused, numbers finite doubles.
// Strict as RapidJSON is by default: no comments, trailing commas, NaN or leading zeros. Strings
// are byte strings (not checked as UTF-8); \uXXXX escapes, surrogate pairs included, become UTF-8.
//
// Numbers are converted as the readers always did (Clinger's fast path, else std::from_chars), so
// they stay bit-identical: integers RapidJSON reads exactly, others from their text again. (RapidJSON
// 1.1's own full-precision conversion, kParseFullPrecisionFlag, reads out of bounds for some inputs
// with an exponent below -330, GetCachedPower10, and asserts or misrounds on some long ones.)
#pragma once

#include <rapidjson/reader.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace megasim::scenarios {

// RapidJSON's recursive descent, not its iterative parser (kParseIterativeFlag: its state machine
// made `megasim whatif` of a 700 MB trace about 15% slower). The recursion is bounded all the same:
// the handlers refuse a container past kMaxJsonDepth in its StartObject/StartArray, before
// RapidJSON descends into it, so RapidJSON is at most kMaxJsonDepth + 1 containers deep.
inline constexpr unsigned kJsonParseFlags = rapidjson::kParseNoFlags;

// RapidJSON's input stream over a text in memory. Copy-optimized (StreamTraits below): RapidJSON
// reads each string and number through a local copy of it, kept in registers, and writes the copy
// back when the value ends, so while a handler runs, Tell() is at the first byte of the string
// (its opening quote) or number it is given, and just after the '{', '[', '}' or ']' of a
// container event or the literal (true, false, null). At the end of the text Peek() and Take()
// give '\0'.
class JsonStream {
 public:
  using Ch = char;
  explicit JsonStream(std::string_view text) : begin_(text.data()), src_(begin_), end_(begin_ + text.size()) {}
  [[nodiscard]] Ch Peek() const { return src_ == end_ ? '\0' : *src_; }
  Ch Take() { return src_ == end_ ? '\0' : *src_++; }
  [[nodiscard]] std::size_t Tell() const { return static_cast<std::size_t>(src_ - begin_); }
  // Output, for kParseInsituFlag only (never used).
  Ch* PutBegin() { return nullptr; }
  void Put(Ch /*c*/) {}
  void Flush() {}
  std::size_t PutEnd(Ch* /*begin*/) { return 0; }

 private:
  const Ch* begin_;
  const Ch* src_;
  const Ch* end_;
};

}  // namespace megasim::scenarios

template <>
struct rapidjson::StreamTraits<megasim::scenarios::JsonStream> {
  enum { copyOptimization = 1 };
};

namespace megasim::scenarios {

// A text and the name its errors give; both must outlive the JsonText.
class JsonText {
 public:
  JsonText(std::string_view text, std::string_view source) : text_(text), source_(source) {}

  [[nodiscard]] std::string_view text() const { return text_; }
  // "SOURCE:LINE:COLUMN" of a byte offset (counting the lines from the start of the text).
  [[nodiscard]] std::string where(std::size_t offset) const;
  // "SOURCE:LINE:COLUMN: expected <expected>, found <the byte at offset | the end of the input>".
  [[nodiscard]] std::string expected_at(std::size_t offset, std::string_view expected) const;
  // The message of a RapidJSON error `code` at its `offset`.
  [[nodiscard]] std::string syntax_error(rapidjson::ParseErrorCode code, std::size_t offset) const;

 private:
  std::string_view text_;
  std::string_view source_;
};

// What the handlers of both readers share: the position of the event being handled, the depth
// bound, the duplicate-key check of objects they do not keep, the conversion of numbers, and the
// first error, recorded (a handler returns false to stop RapidJSON, never throws through it) and
// thrown by parse_json_text once RapidJSON has returned.
class JsonChecks {
 public:
  explicit JsonChecks(const JsonText& text) : text_(text) {}
  void attach(const JsonStream& stream) { stream_ = &stream; }
  [[nodiscard]] const std::string& error() const { return error_; }  // empty while none

 protected:
  // Where RapidJSON is in the text (JsonStream says where, event by event), and in StartObject or
  // StartArray the offset of the '{' or '['.
  [[nodiscard]] std::size_t offset() const { return stream_->Tell(); }
  [[nodiscard]] std::size_t bracket_offset() const { return stream_->Tell() - 1; }
  // A container opens (in StartObject/StartArray); false (the error recorded) past kMaxJsonDepth.
  bool open_container();
  void close_container() { --depth_; }
  // Checked keys of open objects nobody keeps: open_keys() in StartObject, then
  // new_key() for each key (false for a duplicate), close_keys() in EndObject.
  void open_keys() { key_starts_.push_back(keys_used_); }
  bool new_key(std::string_view key);
  void close_keys() {
    keys_used_ = key_starts_.back();
    key_starts_.pop_back();
  }
  // Records the duplicate-key error of the key being read (in Key): false.
  bool duplicate(std::string_view key);
  // The number at offset() (in Double), converted from its text into `x`; false (the error
  // recorded) when it is not within the range of a double.
  bool convert_number(double& x);
  // Records "SOURCE:LINE:COLUMN: expected <expected>, found ..." at `at`, or `message` as it is;
  // both return false.
  bool fail_expected(std::size_t at, std::string_view expected);
  bool fail(std::string message);

  const JsonText& text_;

 private:
  const JsonStream* stream_ = nullptr;
  int depth_ = 0;
  std::vector<std::string> keys_;        // the keys of the open objects, innermost last
  std::size_t keys_used_ = 0;            // keys_[0, keys_used_) are in use (the rest reused)
  std::vector<std::size_t> key_starts_;  // where each open object's keys begin in keys_
  std::string error_;
};

// The base of a reader's handler (Derived): RapidJSON's number events, each handed on as
// Derived::Number(double): integers exactly (RapidJSON calls Int only after a minus sign, so Int(0)
// is -0), other numbers converted again from their text. Derived has the other events.
template <class Derived>
class JsonHandler : public JsonChecks {
 public:
  using JsonChecks::JsonChecks;
  bool Int(int i) { return derived().Number(i == 0 ? -0.0 : static_cast<double>(i)); }
  bool Uint(unsigned u) { return derived().Number(static_cast<double>(u)); }
  bool Int64(std::int64_t i) { return derived().Number(static_cast<double>(i)); }
  bool Uint64(std::uint64_t u) { return derived().Number(static_cast<double>(u)); }
  bool Double(double /*rapidjson_normal_precision*/) {
    double x = 0;
    return convert_number(x) && derived().Number(x);
  }
  bool RawNumber(const char* /*digits*/, rapidjson::SizeType /*length*/, bool /*copy*/) { return false; }  // unused

 private:
  Derived& derived() { return static_cast<Derived&>(*this); }
};

// Throws sim::ConfigError with the first error: the handler's, else RapidJSON's, else a byte left
// after the document (a '\0', which RapidJSON takes for the end of the text).
void throw_json_error(const JsonText& text, const JsonChecks& handler, const rapidjson::ParseResult& result,
                      std::size_t stopped_at);

// Reads the whole text with `handler` (a JsonHandler); errors as throw_json_error.
template <class Handler>
void parse_json_text(const JsonText& text, Handler& handler) {
  JsonStream stream(text.text());
  handler.attach(stream);
  rapidjson::Reader reader;
  const rapidjson::ParseResult result = reader.Parse<kJsonParseFlags>(stream, handler);
  if (result.IsError() || !handler.error().empty() || stream.Tell() != text.text().size()) {
    throw_json_error(text, handler, result, stream.Tell());
  }
}

}  // namespace megasim::scenarios
