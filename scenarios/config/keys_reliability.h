// The [failures], [recovery] and [checkpoint] sections of the key table (keys.h), for campaigns.
#pragma once

#include <vector>

#include "scenarios/config/keys.h"

namespace megasim::scenarios {

void add_reliability_keys(std::vector<KeySpec>& table);

}  // namespace megasim::scenarios
