#include <iostream>

#include "cli/commands.h"
#include "scenarios/keys.h"

namespace megasim::cli {

Action register_keys(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("keys", "list every scenario key with its type, default, unit and meaning");
  return [cmd] {
    if (cmd->parsed())
      std::cout << "Scenario keys (TOML sections; override with --set section.key=value)\n"
                << scenarios::describe_keys();
  };
}

}  // namespace megasim::cli
