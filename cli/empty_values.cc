#include "cli/empty_values.h"

#include <string>
#include <vector>

#include "sim/error.h"

namespace megasim::cli {
namespace {

// The values given to the option `name` on the command line, as typed: `--name V` or `--name=V`.
std::vector<std::string> typed_values(const std::string& name, int argc, const char* const* argv) {
  std::vector<std::string> out;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == name && i + 1 < argc) out.emplace_back(argv[i + 1]);
    if (arg.rfind(name + "=", 0) == 0) out.push_back(arg.substr(name.size() + 1));
  }
  return out;
}

// A comma-separated list with an empty item ("1,,2", "1,2,"): CLI11 drops the empty item, which
// would read a typo as a shorter list.
bool has_empty_item(const std::string& list, char delimiter) {
  return !list.empty() && (list.front() == delimiter || list.back() == delimiter ||
                           list.find(std::string(2, delimiter)) != std::string::npos);
}

void refuse_in(const CLI::App& command, int argc, const char* const* argv) {
  for (const CLI::Option* option : command.get_options()) {
    if (option->get_type_size_max() == 0) continue;  // a flag takes no value
    for (const std::string& value : option->results()) {
      if (value.empty()) {
        throw sim::ConfigError(option->get_name(), "\"\"",
                               "a non-empty value (an empty one, as an unset shell variable gives, names nothing)");
      }
    }
    const char delimiter = option->get_delimiter();
    if (delimiter == '\0' || option->count() == 0) continue;
    for (const std::string& typed : typed_values(option->get_name(), argc, argv)) {
      if (has_empty_item(typed, delimiter)) {
        throw sim::ConfigError(option->get_name(), "\"" + typed + "\"",
                               std::string("a list with no empty item (items separated by one '") + delimiter + "')");
      }
    }
  }
  for (const CLI::App* sub : command.get_subcommands()) refuse_in(*sub, argc, argv);
}

}  // namespace

void refuse_empty_values(const CLI::App& app, int argc, const char* const* argv) {
  for (const CLI::App* command : app.get_subcommands()) refuse_in(*command, argc, argv);
}

}  // namespace megasim::cli
