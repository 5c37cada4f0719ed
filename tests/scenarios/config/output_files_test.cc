#include "scenarios/config/output_files.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <string>

#include "sim/error.h"
#include "tests/scenarios/config_error_util.h"

namespace megasim::scenarios {
namespace {

using testing::config_error_message;

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("megasim_output_files_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string read(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void write(const fs::path& file, const std::string& text) {
  std::ofstream(file, std::ios::binary) << text;
}

// Every path under `dir` with its type (links not followed).
std::map<std::string, fs::file_type> listing(const fs::path& dir) {
  std::map<std::string, fs::file_type> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) out[e.path().string()] = e.symlink_status().type();
  return out;
}

TEST(OutputFiles, NewFileAppearsWholeWithTheUmasksMode) {
  const fs::path dir = fresh_dir("new");
  write_output_file((dir / "a.csv").string(), "x,y\n1,2\n", "--csv");
  EXPECT_EQ(read(dir / "a.csv"), "x,y\n1,2\n");
  const mode_t mask = ::umask(0);
  ::umask(mask);
  EXPECT_EQ(static_cast<mode_t>(fs::status(dir / "a.csv").permissions()), 0666 & ~mask);
  EXPECT_EQ(listing(dir).size(), 1U);  // no temporary left
}

TEST(OutputFiles, ReplacedFileKeepsItsPermissionBits) {
  const fs::path dir = fresh_dir("replace");
  write(dir / "a.csv", "old");
  fs::permissions(dir / "a.csv", fs::perms(0640));
  write_output_file((dir / "a.csv").string(), "new", "--csv");
  EXPECT_EQ(read(dir / "a.csv"), "new");
  EXPECT_EQ(fs::status(dir / "a.csv").permissions(), fs::perms(0640));
}

TEST(OutputFiles, RefusesWhatIsNotARegularFileBeforeWriting) {
  const fs::path dir = fresh_dir("kinds");
  fs::create_directory(dir / "folder");
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0644), 0);
  EXPECT_NE(config_error_message([&] { write_output_file((dir / "folder").string(), "x", "--csv"); }, "--csv")
                .find("directory"),
            std::string::npos);
  EXPECT_NE(
      config_error_message([&] { write_output_file((dir / "fifo").string(), "x", "--csv"); }, "--csv").find("FIFO"),
      std::string::npos);
  // Only checked, never written: a rename over /dev/null would replace the machine's /dev/null.
  EXPECT_NE(config_error_message([] { static_cast<void>(checked_output_file("/dev/null", "--csv")); }, "--csv")
                .find("character device"),
            std::string::npos);
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
  EXPECT_TRUE(fs::is_fifo(dir / "fifo"));
  EXPECT_EQ(listing(dir).size(), 2U);
}

TEST(OutputFiles, RefusesEmptyPathsFolderPathsAndMissingFolders) {
  const fs::path dir = fresh_dir("paths");
  EXPECT_NE(config_error_message([] { static_cast<void>(checked_output_file("", "--out")); }, "--out").find("\"\""),
            std::string::npos);
  config_error_message([&] { static_cast<void>(checked_output_file((dir / "sub/").string(), "--out")); }, "--out");
  EXPECT_NE(config_error_message(
                [&] { static_cast<void>(checked_output_file((dir / "missing/a.csv").string(), "--out")); }, "--out")
                .find("existing folder"),
            std::string::npos);
  write(dir / "file", "x");
  config_error_message([&] { static_cast<void>(checked_output_file((dir / "file/a.csv").string(), "--out")); },
                       "--out");
  config_error_message([] { check_output_folder("", "--out"); }, "--out");
  EXPECT_NE(config_error_message([&] { check_output_folder((dir / "file").string(), "--out"); }, "--out")
                .find("regular file"),
            std::string::npos);
  check_output_folder((dir / "new/deeper").string(), "--out");  // missing folders under a writable one: fine
  EXPECT_FALSE(fs::exists(dir / "new"));                        // checked, not created
}

TEST(OutputFiles, LinkToARegularFileWritesItsTarget) {
  const fs::path dir = fresh_dir("link");
  fs::create_directory(dir / "elsewhere");
  write(dir / "elsewhere" / "real.json", "old");
  fs::create_symlink("elsewhere/real.json", dir / "link.json");
  write_output_file((dir / "link.json").string(), "new", "--out");
  EXPECT_TRUE(fs::is_symlink(dir / "link.json"));
  EXPECT_EQ(read(dir / "elsewhere" / "real.json"), "new");
  EXPECT_EQ(listing(dir).size(), 3U);  // the temporary was made and renamed in the target's folder
}

TEST(OutputFiles, RefusesDanglingLinksAndLinksToOtherKinds) {
  const fs::path dir = fresh_dir("bad_links");
  fs::create_symlink("missing.json", dir / "dangling");
  fs::create_directory(dir / "folder");
  fs::create_symlink("folder", dir / "to_folder");
  fs::create_symlink("/dev/null", dir / "to_null");
  const auto before = listing(dir);
  config_error_message([&] { write_output_file((dir / "dangling").string(), "x", "--csv"); }, "--csv");
  config_error_message([&] { write_output_file((dir / "to_folder").string(), "x", "--csv"); }, "--csv");
  EXPECT_NE(config_error_message([&] { write_output_file((dir / "to_null").string(), "x", "--csv"); }, "--csv")
                .find("character device, through a link"),
            std::string::npos);
  EXPECT_EQ(listing(dir), before);
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
}

TEST(OutputFiles, AWriterThatThrowsLeavesNothing) {
  const fs::path dir = fresh_dir("throws");
  write(dir / "a.json", "old");
  const auto before = listing(dir);
  EXPECT_THROW(write_output_file((dir / "a.json").string(),
                                 [](std::ostream& out) {
                                   out << std::string(3 << 20, 'x');  // past the buffer: bytes reach the temporary
                                   throw std::runtime_error("the writer failed");
                                 },
                                 "--out"),
               std::runtime_error);
  EXPECT_EQ(listing(dir), before);
  EXPECT_EQ(read(dir / "a.json"), "old");
}

TEST(OutputFiles, ASetIsWrittenWholeOrNotAtAll) {
  const fs::path dir = fresh_dir("set");
  write(dir / "report.json", "old report");
  const auto before = listing(dir);
  {
    OutputFiles files;
    files.create_folder((dir / "new" / "deeper").string(), "--out");
    files.add((dir / "report.json").string(), "--out", "new report");
    files.add((dir / "new" / "deeper" / "trace.json").string(), "--out", "trace");
    EXPECT_THROW(files.add((dir / "third.json").string(), "--out",
                           [](std::ostream&) { throw sim::ConfigError("trace.ranks", "7", "ranks 0 to 3"); }),
                 sim::ConfigError);
  }  // not committed: nothing changes, the folders made are gone
  EXPECT_EQ(listing(dir), before);
  EXPECT_EQ(read(dir / "report.json"), "old report");
  OutputFiles files;
  files.create_folder((dir / "new").string(), "--out");
  files.add((dir / "report.json").string(), "--out", "new report");
  files.add((dir / "new" / "trace.json").string(), "--out", "trace");
  files.commit();
  EXPECT_EQ(read(dir / "report.json"), "new report");
  EXPECT_EQ(read(dir / "new" / "trace.json"), "trace");
  EXPECT_EQ(listing(dir).size(), 3U);
}

TEST(OutputFiles, AFailedRenamePutsBackTheFilesAlreadyRenamed) {
  const fs::path dir = fresh_dir("rename");
  write(dir / "first.json", "old first");
  OutputFiles files;
  files.add((dir / "first.json").string(), "--out", "new first");
  files.add((dir / "new.json").string(), "--out", "new");
  files.add((dir / "last.json").string(), "--out", "new last");
  // last.json becomes a folder that is not empty after it was checked: its rename fails.
  fs::create_directories(dir / "last.json" / "inside");
  const std::string message = config_error_message([&] { files.commit(); }, "--out");
  EXPECT_NE(message.find("last.json"), std::string::npos) << message;
  EXPECT_EQ(read(dir / "first.json"), "old first");
  EXPECT_FALSE(fs::exists(dir / "new.json"));
  EXPECT_EQ(listing(dir).size(), 3U);  // first.json, last.json/, last.json/inside/: no temporary, no backup
}

TEST(OutputFiles, OneFileTwiceInASetIsRefused) {
  const fs::path dir = fresh_dir("twice");
  write(dir / "graph", "old");
  fs::create_symlink("graph", dir / "alias");
  OutputFiles files;
  files.add((dir / "graph").string(), "--write-json", "json");
  EXPECT_NE(config_error_message([&] { files.add((dir / "alias").string(), "--write-dot", "dot"); }, "--write-dot")
                .find("--write-json"),
            std::string::npos);
  EXPECT_NE(
      config_error_message([&] { files.add((dir / "." / "graph").string(), "--write-dot", "dot"); }, "--write-dot")
          .find("graph"),
      std::string::npos);
}

TEST(OutputFiles, AWriteErrorIsReportedAndLeavesNothing) {
  // A file-size limit makes write() fail with EFBIG once the limit is reached (SIGXFSZ ignored, as
  // megasim's main does): the same path a full disk takes (ENOSPC).
  const fs::path dir = fresh_dir("limit");
  rlimit old{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  const auto previous_handler = std::signal(SIGXFSZ, SIG_IGN);
  rlimit small = old;
  small.rlim_cur = 1 << 20;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  const std::string message = config_error_message(
      [&] {
        write_output_file((dir / "big").string(), [](std::ostream& out) { out << std::string(4 << 20, 'x'); }, "--out");
      },
      "--out");
  ::setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, previous_handler);
  EXPECT_NE(message.find("file too large"), std::string::npos) << message;
  EXPECT_TRUE(listing(dir).empty());
}

}  // namespace
}  // namespace megasim::scenarios
