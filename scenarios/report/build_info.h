// Which megasim this is: its version and the git commit it was built from (for report.json's
// provenance and --version). The commit lives in one generated translation unit
// (cmake/build_commit.cmake), so a new commit recompiles that file only and no header changes.
#pragma once

#include <string_view>

namespace megasim::scenarios {

// The project version of CMakeLists.txt, e.g. "0.1.0".
std::string_view megasim_version();
// The commit's short hash, "-dirty" appended when tracked files had changes at build time;
// "unknown" when megasim was not built from a git checkout.
std::string_view megasim_commit();

}  // namespace megasim::scenarios
