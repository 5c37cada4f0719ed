// ConfigError checks for tests of bad input.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "sim/error.h"

namespace megasim::scenarios::testing {

// A ConfigError's key: "(no error)" when `f` throws none.
template <typename F>
std::string thrown_key(F&& f) {
  try {
    std::forward<F>(f)();
  } catch (const sim::ConfigError& e) {
    return e.key();
  }
  return "(no error)";
}

// The ConfigError's message; fails the test when `f` does not throw one naming `key`.
template <typename F>
std::string config_error_message(F&& f, const std::string& key) {
  try {
    std::forward<F>(f)();
  } catch (const sim::ConfigError& e) {
    EXPECT_EQ(e.key(), key) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "expected a ConfigError for " << key;
  return "";
}

}  // namespace megasim::scenarios::testing
