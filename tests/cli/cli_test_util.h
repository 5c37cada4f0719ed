// Running the megasim executable from the CLI tests: exit code and output of a command line.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace megasim::cli_testing {

struct Result {
  int exit_code;       // -1 when the command did not exit normally (a signal)
  std::string output;  // what it printed, on both streams when the command line redirects them
};

// Runs a shell command line (sh -c) and collects its standard output.
inline Result run_shell(const std::string& command) {
  FILE* pipe = popen(command.c_str(), "r");
  std::string output;
  std::array<char, 4096> buffer{};
  while (fgets(buffer.data(), static_cast<int>(buffer.size()), pipe) != nullptr) output += buffer.data();
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

// megasim with these arguments, stdout and stderr together.
inline Result run(const std::string& args) {
  return run_shell(std::string(MEGASIM_BINARY) + " " + args + " 2>&1");
}

inline std::string contents(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

inline void write_text(const std::filesystem::path& file, const std::string& text) {
  std::ofstream(file, std::ios::binary) << text;
}

}  // namespace megasim::cli_testing
