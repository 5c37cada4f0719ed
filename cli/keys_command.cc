#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "scenarios/config/keys.h"
#include "scenarios/config/keys_json.h"

namespace megasim::cli {

Action register_keys(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("keys", "list every scenario key with its type, default, unit and meaning");
  auto json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json, "print the table as JSON: {\"keys\": [{key, type, default, unit, description, ...}]}");
  return [cmd, json] {
    if (!cmd->parsed()) return;
    if (*json) {
      std::cout << scenarios::keys_json();
    } else {
      std::cout << "Scenario keys (TOML sections; override with --set section.key=value)\n"
                << scenarios::describe_keys();
    }
  };
}

}  // namespace megasim::cli
