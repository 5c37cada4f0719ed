// The key table (keys.h) as data, for `megasim keys --json` and Python's megasim.keys().
#pragma once

#include <string>

namespace megasim::scenarios {

// {"keys": [{"key": "section.name", "section", "name", "type": "integer|number|boolean|string",
// "default": the default as a JSON value of that type, "unit": "" when dimensionless, "description",
// "choices": the valid values of a string key as the table words them ("" for other keys)}, ...]},
// in the table's order.
std::string keys_json();

}  // namespace megasim::scenarios
