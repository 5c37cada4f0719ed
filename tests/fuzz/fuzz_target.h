// The contract every fuzz target of this folder checks: megasim's readers either accept an input or
// throw sim::ConfigError (which the CLI turns into exit code 2 and a message). Any other exception,
// a crash, a sanitizer report or a hang is a bug. Each target defines run_input(); libFuzzer (the
// fuzz_* programs, Clang) or the corpus runner (regression_main.cc, any compiler) calls it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace megasim::fuzz {

void run_input(std::string_view input);

}  // namespace megasim::fuzz

// libFuzzer's entry point (fuzz_entry.cc): run_input, with sim::ConfigError as a refusal.
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);
