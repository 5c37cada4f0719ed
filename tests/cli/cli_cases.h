// Bad-input cases of the CLI tests: a command line and what its refusal must name.
#pragma once

#include <gtest/gtest.h>

#include <span>
#include <string>

#include "cli_test_util.h"

namespace megasim::cli_testing {

struct BadInput {
  const char* args;
  const char* must_mention;
};

// Each case exits with code 2 and a message that names the key.
inline void expect_refused(std::span<const BadInput> cases) {
  for (const BadInput& c : cases) {
    const Result r = run(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.must_mention), std::string::npos) << c.args << "\n" << r.output;
  }
}

// Whether this megasim has the CUDA backend (`megasim backends --json`): some refusals name the
// option at fault only when the backend they need was built, and --backend otherwise.
inline bool cuda_backend_built() {
  const std::string backends = run("backends --json").output;
  const std::string cuda = backends.substr(backends.find(R"("name": "cuda")"));
  return cuda.substr(0, cuda.find('}')).find(R"("built": true)") != std::string::npos;
}

// A shipped scenario file by its path under scenarios/.
inline std::string scenario(const std::string& name) {
  return std::string(MEGASIM_SOURCE_DIR) + "/scenarios/" + name;
}

}  // namespace megasim::cli_testing
