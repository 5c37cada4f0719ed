// Runs every case of the hostile-input catalogue (hostile_case.h) against the megasim executable.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>

#include "../cli_test_util.h"
#include "hostile_case.h"

namespace megasim::hostile {

namespace {
std::vector<HostileCase>& registry() {
  static std::vector<HostileCase> cases;
  return cases;
}
}  // namespace

void add_cases(const std::vector<HostileCase>& cases) {
  registry().insert(registry().end(), cases.begin(), cases.end());
}

const std::vector<HostileCase>& all_cases() {
  return registry();
}

namespace {

namespace fs = std::filesystem;
using cli_testing::Result;

std::string replace_all(std::string text, const std::string& what, const std::string& with) {
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + with.size())) {
    text.replace(at, what.size(), with);
  }
  return text;
}

// Every path under `dir` (not following links) with its type, so a FIFO or a link that a run
// replaced by a regular file reads differently.
std::map<std::string, fs::file_type> listing(const fs::path& dir) {
  std::map<std::string, fs::file_type> out;
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(dir)) {
    out[e.path().string()] = e.symlink_status().type();
  }
  return out;
}

Result shell_in(const fs::path& dir, const std::string& command) {
  return cli_testing::run_shell("cd '" + dir.string() + "' && { " + command + "\n} 2>&1");
}

class HostileCatalogue : public ::testing::TestWithParam<HostileCase> {};

TEST_P(HostileCatalogue, RefusedCleanly) {
  const HostileCase& c = GetParam();
  const fs::path dir = fs::temp_directory_path() / ("megasim_hostile_" + c.name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  if (!c.toml.empty()) cli_testing::write_text(dir / "scenario.toml", c.toml);
  if (!c.setup.empty()) {
    const Result setup = shell_in(dir, c.setup);
    ASSERT_EQ(setup.exit_code, 0) << "setup failed: " << c.setup << "\n" << setup.output;
  }
  const auto before = listing(dir);
  std::string args = replace_all(c.args, "{S}", "scenario.toml");
  args = replace_all(args, "{175B}", std::string(MEGASIM_SOURCE_DIR) + "/scenarios/megascale/175b_megascale.toml");
  // `timeout` exits 124 on a hang and 128 + N on a signal; neither is a refusal.
  const std::string limits = c.ulimit.empty() ? "" : "ulimit " + c.ulimit + " && ";
  const Result r =
      shell_in(dir, limits + "timeout -s KILL " + std::to_string(c.timeout_s) + " " + MEGASIM_BINARY + " " + args);
  EXPECT_EQ(r.exit_code, c.exit_code) << "megasim " << args << "\n" << r.output;
  for (const std::string& text : c.output_has) {
    EXPECT_NE(r.output.find(text), std::string::npos)
        << "\"" << text << "\" not in the output of megasim " << args << ":\n"
        << r.output;
  }
  if (!c.check.empty()) {
    const Result check = shell_in(dir, c.check);
    EXPECT_EQ(check.exit_code, 0) << "check failed: " << c.check << "\n" << check.output;
  }
  if (!c.may_write) {
    EXPECT_EQ(listing(dir), before) << "the folder changed: megasim " << args;
  }
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Catalogue, HostileCatalogue, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<HostileCase>& p) { return p.param.name; });

}  // namespace
}  // namespace megasim::hostile
