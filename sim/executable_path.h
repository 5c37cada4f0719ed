// This program's own executable, for the commands that re-execute themselves (sim/huge_page_heap.h,
// backend/mpi/mpi_launch.h) whatever the working directory or PATH.
#pragma once

#include <optional>
#include <string>

namespace megasim::sim {

// The path /proc/self/exe names; nullopt where /proc is not mounted or the path is too long.
std::optional<std::string> executable_path();

}  // namespace megasim::sim
