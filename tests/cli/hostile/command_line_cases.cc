// Hostile command lines: unknown commands and options, missing or doubled values.
#include "hostile_case.h"

namespace {

using megasim::hostile::HostileCase;

const bool registered = megasim::hostile::register_cases({
    HostileCase{.name = "unknown_command", .args = "simulate {S}", .output_has = {"simulate"}},
    HostileCase{.name = "unknown_option", .args = "run --outdir out", .output_has = {"--outdir"}},
    HostileCase{.name = "option_without_its_value", .args = "run --out", .output_has = {"--out"}},
    HostileCase{.name = "no_command", .args = "", .output_has = {"subcommand"}},
});

}  // namespace
