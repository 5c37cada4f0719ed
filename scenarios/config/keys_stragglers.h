// The [stragglers] section of the key table (keys.h): models/stragglers.h's parameters.
#pragma once

#include <vector>

#include "scenarios/config/keys.h"

namespace megasim::scenarios {

void add_straggler_keys(std::vector<KeySpec>& table);

}  // namespace megasim::scenarios
