#include "scenarios/config/json_writer.h"

#include <fmt/format.h>

#include <cmath>

#include "sim/error.h"

namespace megasim::scenarios {

std::string json_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  for (const char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += fmt::format("\\u{:04x}", static_cast<unsigned>(static_cast<unsigned char>(c)));
        } else {
          out += c;
        }
    }
  }
  return out;
}

void JsonWriter::newline() {
  if (indent_ == 0) return;
  out_ += '\n';
  out_.append(first_in_scope_.size() * static_cast<std::size_t>(indent_), ' ');
}

void JsonWriter::before_value() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (first_in_scope_.empty()) return;
  if (!first_in_scope_.back()) out_ += ',';
  first_in_scope_.back() = false;
  newline();
}

JsonWriter& JsonWriter::begin_object() {
  before_value();
  out_ += '{';
  first_in_scope_.push_back(true);
  return *this;
}

JsonWriter& JsonWriter::end_object() {
  MEGASIM_ASSERT(!first_in_scope_.empty(), "end_object without begin_object");
  const bool empty = first_in_scope_.back();
  first_in_scope_.pop_back();
  if (!empty) newline();
  out_ += '}';
  return *this;
}

JsonWriter& JsonWriter::begin_array() {
  before_value();
  out_ += '[';
  first_in_scope_.push_back(true);
  return *this;
}

JsonWriter& JsonWriter::end_array() {
  MEGASIM_ASSERT(!first_in_scope_.empty(), "end_array without begin_array");
  const bool empty = first_in_scope_.back();
  first_in_scope_.pop_back();
  if (!empty) newline();
  out_ += ']';
  return *this;
}

JsonWriter& JsonWriter::key(std::string_view name) {
  before_value();
  out_ += '"';
  out_ += json_escape(name);
  out_ += indent_ == 0 ? "\":" : "\": ";
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::value(double x) {
  before_value();
  if (!std::isfinite(x)) {
    out_ += "null";
  } else {
    out_ += fmt::format("{}", x);
  }
  return *this;
}

JsonWriter& JsonWriter::value(std::int64_t x) {
  before_value();
  out_ += fmt::format("{}", x);
  return *this;
}

JsonWriter& JsonWriter::value(std::uint64_t x) {
  before_value();
  out_ += fmt::format("{}", x);
  return *this;
}

JsonWriter& JsonWriter::value(bool x) {
  before_value();
  out_ += x ? "true" : "false";
  return *this;
}

JsonWriter& JsonWriter::value(std::string_view text) {
  before_value();
  out_ += '"';
  out_ += json_escape(text);
  out_ += '"';
  return *this;
}

JsonWriter& JsonWriter::null() {
  before_value();
  out_ += "null";
  return *this;
}

}  // namespace megasim::scenarios
