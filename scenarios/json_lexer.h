// The tokenizer of megasim's strict JSON reading (RFC 8259): whitespace, literals, numbers,
// strings and the punctuation of arrays and objects, over a text held in memory (a string or a
// mapped file). The DOM reader (json_reader.h) and the streaming trace reader (trace_events.h) are
// both built on it, so they accept the same texts and name the same place in the same words.
// Strict: no comments, trailing commas, NaN, leading zeros; numbers are finite doubles.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace megasim::scenarios {

class JsonLexer {
 public:
  // `text` and `source` (the name errors give) must outlive the lexer.
  JsonLexer(std::string_view text, std::string_view source) : text_(text), source_(source) {}

  // The next byte after whitespace, not consumed; '\0' at the end of the text.
  char peek() {
    skip_space();
    return pos_ < text_.size() ? text_[pos_] : '\0';
  }
  // Whether only whitespace is left.
  bool at_end() {
    skip_space();
    return pos_ >= text_.size();
  }
  // Consumes the byte peek() returned.
  void advance() { ++pos_; }
  // Consumes `c` after whitespace, or fails expecting `what`.
  void expect(char c, std::string_view what);
  // Consumes `word` ("true", "false" or "null") at the current byte, or fails expecting a value.
  void literal(std::string_view word);
  // A number at the current byte (its first byte peeked).
  double number();
  // The string at the current '"' (peeked), unescaped (UTF-8) into `out`, which it replaces.
  void string(std::string& out);

  // Walks the elements of an array or the members of an object whose opening bracket was consumed:
  //   bool first = true; while (lexer.next_element(']', first)) { ...one value... }
  // True when another element follows (the ',' before it consumed); false once `close` is consumed.
  bool next_element(char close, bool& first);
  // The key of an object member (after next_element('}', ...)) into `key`, its ':' not consumed.
  // Returns the key's offset, for a duplicate-key error (fail_at).
  std::size_t member_key(std::string& key);

  // Throws sim::ConfigError("SOURCE:LINE:COLUMN: expected <expected>, found <the byte there>"),
  // line and column 1-based, the column counted in bytes.
  [[noreturn]] void fail(std::string_view expected) const { fail_at(pos_, expected); }
  [[noreturn]] void fail_at(std::size_t offset, std::string_view expected) const;
  // "SOURCE:LINE:COLUMN" of an offset, for errors about what a well-formed text holds.
  [[nodiscard]] std::string where(std::size_t offset) const;

  // Bytes consumed so far.
  [[nodiscard]] std::size_t offset() const { return pos_; }

 private:
  void skip_space() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }
  [[nodiscard]] char current() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  std::uint32_t hex4();

  std::string_view text_;
  std::string_view source_;
  std::size_t pos_ = 0;
};

}  // namespace megasim::scenarios
