// A ConfigError's key, for tests of bad input: "(no error)" when `f` throws none.
#pragma once

#include <string>
#include <utility>

#include "sim/error.h"

namespace megasim::scenarios::testing {

template <typename F>
std::string thrown_key(F&& f) {
  try {
    std::forward<F>(f)();
  } catch (const sim::ConfigError& e) {
    return e.key();
  }
  return "(no error)";
}

}  // namespace megasim::scenarios::testing
