// One registration function per subcommand: each adds its options to the app and returns the
// action to run once parsing succeeded. Actions throw sim::ConfigError on bad input.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace megasim::cli {

using Action = std::function<void()>;

Action register_topo(CLI::App& app);
Action register_collective(CLI::App& app);
Action register_keys(CLI::App& app);
Action register_plan(CLI::App& app);
Action register_run(CLI::App& app);
Action register_calibrate(CLI::App& app);
Action register_backends(CLI::App& app);
Action register_validate(CLI::App& app);
Action register_campaign(CLI::App& app);
Action register_whatif(CLI::App& app);
Action register_sweep(CLI::App& app);
Action register_explain(CLI::App& app);

}  // namespace megasim::cli
