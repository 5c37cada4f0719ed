#include "scenarios/report/build_info.h"

// MEGASIM_VERSION is defined for this file alone (scenarios/CMakeLists.txt).
std::string_view megasim::scenarios::megasim_version() {
  return MEGASIM_VERSION;
}
