// `megasim topo`: what was built, as text or JSON.
#pragma once

#include <string>

#include "topology/summary.h"

namespace megasim::scenarios {

std::string to_text(const topo::TopologySummary& summary);
std::string to_json(const topo::TopologySummary& summary);

}  // namespace megasim::scenarios
