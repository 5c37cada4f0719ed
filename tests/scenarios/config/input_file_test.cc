#include "scenarios/config/input_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "scenarios/config/device.h"
#include "scenarios/config/loader.h"
#include "scenarios/config/mapped_file.h"
#include "sim/error.h"
#include "tests/scenarios/config_error_util.h"

namespace megasim::scenarios {
namespace {

using testing::config_error_message;

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("megasim_input_file_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

TEST(InputFile, ReadsARegularFileOrALinkToOne) {
  const fs::path dir = fresh_dir("regular");
  std::ofstream(dir / "a.toml", std::ios::binary) << "[cluster]\ngpus = 64\n";
  fs::create_symlink("a.toml", dir / "link.toml");
  EXPECT_EQ(read_input_file((dir / "a.toml").string(), "scenario", "a TOML file"), "[cluster]\ngpus = 64\n");
  EXPECT_EQ(read_input_file((dir / "link.toml").string(), "scenario", "a TOML file"), "[cluster]\ngpus = 64\n");
  std::ofstream(dir / "empty.toml").flush();
  EXPECT_EQ(read_input_file((dir / "empty.toml").string(), "scenario", "a TOML file"), "");
}

TEST(InputFile, RefusesFoldersDevicesFifosAndMissingFilesBeforeReading) {
  const fs::path dir = fresh_dir("kinds");
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0644), 0);
  fs::create_symlink("fifo", dir / "to_fifo");
  const auto reason = [](const std::string& path) {
    return config_error_message([&] { read_input_file(path, "scenario", "a readable TOML file"); }, "scenario");
  };
  EXPECT_NE(reason(dir.string()).find("(it is a directory)"), std::string::npos);
  EXPECT_NE(reason("/dev/zero").find("(it is a character device)"), std::string::npos);
  // Neither blocks: a FIFO is refused from its stat, without an open that waits for a writer.
  EXPECT_NE(reason((dir / "fifo").string()).find("(it is a FIFO)"), std::string::npos);
  EXPECT_NE(reason((dir / "to_fifo").string()).find("(it is a FIFO)"), std::string::npos);
  EXPECT_NE(reason((dir / "missing.toml").string()).find("no such file"), std::string::npos);
  EXPECT_NE(reason("").find("\"\""), std::string::npos);
}

TEST(InputFile, RefusesAFileAboveTheBoundFromItsSize) {
  const fs::path dir = fresh_dir("bound");
  {
    std::ofstream out(dir / "big.toml", std::ios::binary);
    out << std::string(4096, '#');
  }
  EXPECT_EQ(read_input_file((dir / "big.toml").string(), "scenario", "a TOML file", 4096).size(), 4096U);
  const std::string message = config_error_message(
      [&] { read_input_file((dir / "big.toml").string(), "scenario", "a TOML file", 4095); }, "scenario");
  EXPECT_NE(message.find("it holds 4 KiB"), std::string::npos) << message;
  // A sparse file of 65 MiB costs nothing to make and is refused by the default bound at once.
  fs::resize_file(dir / "big.toml", kMaxTomlFileBytes + 1);
  EXPECT_NE(
      config_error_message([&] { read_input_file((dir / "big.toml").string(), "scenario", "a TOML file"); }, "scenario")
          .find("at most 64 MiB"),
      std::string::npos);
}

TEST(InputFile, EveryReaderRefusesTheSame) {
  const fs::path dir = fresh_dir("readers");
  EXPECT_NE(config_error_message([&] { load_scenario_file(dir.string()); }, "scenario").find("directory"),
            std::string::npos);
  Scenario s;
  s.calibration_file = "/dev/zero";
  EXPECT_NE(
      config_error_message([&] { static_cast<void>(device_model(s)); }, "calibration.file").find("character device"),
      std::string::npos);
  EXPECT_NE(config_error_message([&] { MappedFile trace(dir.string(), "trace file", "a trace"); }, "trace file")
                .find("directory"),
            std::string::npos);
}

}  // namespace
}  // namespace megasim::scenarios
