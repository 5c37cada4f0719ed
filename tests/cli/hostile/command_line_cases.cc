// Hostile command lines: unknown commands and options, missing, doubled or mistyped values. The
// option parser's errors read as every other error does ("megasim: error: ...", exit 2) and say
// where the options are described.
#include "hostile_case.h"

namespace {

using megasim::hostile::HostileCase;

const bool registered = megasim::hostile::register_cases({
    HostileCase{.name = "unknown_command",
                .args = "simulate {S}",
                .output_has = {"megasim: error: ", "simulate", "run 'megasim --help' for the options"}},
    HostileCase{.name = "unknown_option",
                .args = "run --outdir out",
                .output_has = {"megasim: error: ", "--outdir", "run 'megasim run --help' for the options"}},
    HostileCase{.name = "option_without_its_value",
                .args = "run --out",
                .output_has = {"megasim: error: ", "--out", "'megasim run --help'"}},
    HostileCase{.name = "no_command", .args = "", .output_has = {"megasim: error: ", "subcommand"}},
    HostileCase{.name = "option_value_of_the_wrong_type",
                .args = "run --iterations many",
                .output_has = {"megasim: error: ", "--iterations", "many", "'megasim run --help'"}},
    HostileCase{.name = "option_value_refused_by_its_check",
                .args = "sweep --confirm-top 0",
                .output_has = {"megasim: error: ", "--confirm-top", "'megasim sweep --help'"}},
});

}  // namespace
