#include "cli/option_checks.h"

#include "sim/error.h"

namespace megasim::cli {

bool given(const CLI::App& command, const std::string& option) {
  return command.get_option(option)->count() > 0;
}

void refuse_inert(const CLI::App& command, const std::string& option, bool applies, const std::string& context) {
  const CLI::Option* o = command.get_option(option);
  if (applies || o->count() == 0) return;
  std::string value;
  for (const std::string& r : o->results()) value += (value.empty() ? "" : ",") + r;  // a flag's is "true"
  throw sim::ConfigError(option, value, "no " + option + " " + context);
}

}  // namespace megasim::cli
