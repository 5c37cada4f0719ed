#include "cli/standard_output.h"

#include <cerrno>
#include <cstdio>
#include <iostream>
#include <string>

#include "scenarios/config/path_kind.h"
#include "sim/error.h"

namespace megasim::cli {

void flush_standard_output() {
  // std::cout writes through stdout's FILE (synchronised with stdio): a failed write marks either.
  // The error number is known only when this flush is what failed; an earlier write's is gone.
  errno = 0;
  std::cout.flush();
  const bool failed = !std::cout;
  const bool unflushed = std::fflush(stdout) != 0;
  if (failed || unflushed || std::ferror(stdout) != 0) {
    const int error = errno;
    throw sim::ConfigError("standard output: the output could not be written in full (" +
                           (error != 0 ? scenarios::errno_text(error) : std::string("a write to it failed")) + ")");
  }
}

}  // namespace megasim::cli
