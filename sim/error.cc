#include "sim/error.h"

namespace megasim::sim {

ConfigError::ConfigError(std::string key, std::string value, std::string valid)
    : std::runtime_error(key + " = " + value + " is invalid: expected " + valid),
      key_(std::move(key)),
      value_(std::move(value)),
      valid_(std::move(valid)) {}

ConfigError::ConfigError(const std::string& message) : std::runtime_error(message) {}

void assertion_failed(const char* expr, const char* file, int line, const char* message) {
  std::fprintf(stderr, "megasim internal error: %s (%s) at %s:%d\n", message, expr, file, line);
  std::abort();
}

}  // namespace megasim::sim
