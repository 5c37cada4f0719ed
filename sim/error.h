// The two kinds of error (STYLE.md §10). ConfigError is a user-input error thrown at the boundary:
// it names the key, the offending value and what would be valid, and the CLI maps it to exit code 2
// (Python maps it to ValueError). Internal invariants use MEGASIM_ASSERT, which aborts.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace megasim::sim {

class ConfigError : public std::runtime_error {
 public:
  // key: dotted name such as "cluster.gpus"; value: the value as the user wrote it;
  // valid: what would be accepted ("a multiple of 8 between 8 and 131072").
  ConfigError(std::string key, std::string value, std::string valid);
  // For errors that are not about one key (a malformed file): the message is used as is.
  explicit ConfigError(const std::string& message);

  [[nodiscard]] const std::string& key() const { return key_; }
  [[nodiscard]] const std::string& value() const { return value_; }
  [[nodiscard]] const std::string& valid() const { return valid_; }

 private:
  std::string key_;
  std::string value_;
  std::string valid_;
};

[[noreturn]] void assertion_failed(const char* expr, const char* file, int line, const char* message);

}  // namespace megasim::sim

// Internal invariant; stays on in release builds because a silently wrong simulation is worse than
// a crash with a location.
#define MEGASIM_ASSERT(expr, message)                                                  \
  do {                                                                                 \
    if (!(expr)) ::megasim::sim::assertion_failed(#expr, __FILE__, __LINE__, message); \
  } while (false)
