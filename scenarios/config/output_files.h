// Files written for the user (`run --out`, `sweep --csv`, `calibrate --out`, `topo --write-json`,
// `validate --out`; Python's RunReport.save): the one place that decides how an output reaches disk.
//
// - A path is refused (sim::ConfigError naming the option and the path, and why) when it is empty,
//   ends in '/', names anything but a regular file (a directory, a device such as /dev/null, a FIFO,
//   a socket), is a link whose target is missing or not a regular file, or lies in a folder that is
//   missing or not writable. Refusing a device or FIFO matters: a rename over /dev/null would
//   replace the machine's /dev/null.
// - A link to a regular file is followed: its target gets the new content and the link stays (as a
//   shell's `>` does); the rename happens in the target's folder.
// - Each file is written to a new temporary in its target's folder (a fresh name created with O_EXCL,
//   so it never clobbers another file), then renamed over the target: readers see the old file or
//   the whole new one. A replaced file keeps its permission bits (and, as root, its owner).
// - The files of one OutputFiles appear together or not at all: every one is written before any is
//   renamed. When a write fails (disk full, an exception from the writer), the temporaries are
//   removed and no target changes; when a rename fails, the targets already renamed are restored
//   from hard-linked backups (or removed, if they are new) and the folders the set created are
//   removed again.
// Not covered: a crash, SIGKILL or power loss mid-write leaves a temporary ("NAME.XXXXXXXX.partial")
// and, without fsync, the kernel may not yet have the bytes on disk.
#pragma once

#include <functional>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

namespace megasim::scenarios {

// Checks an output file's path now, before the work that fills it (see above), and returns where
// the file will be written: the path itself or, for a link, its target's canonical path.
std::string checked_output_file(const std::string& path, const std::string& option);
// Checks a folder for outputs now: refused when empty or when it exists as anything but a folder
// (or a link to one), or when the nearest folder that exists above a missing one is not writable.
void check_output_folder(const std::string& folder, const std::string& option);
// Checks a folder (check_output_folder) and, when it exists, the files `names` in it that will be
// written (checked_output_file).
void check_output_files(const std::string& folder, const std::vector<std::string>& names, const std::string& option);

// `option` names the output in errors: "--out", "--csv".
class OutputFiles {
 public:
  OutputFiles() = default;
  // Without commit(): removes every temporary and the folders create_folder made.
  ~OutputFiles();
  OutputFiles(const OutputFiles&) = delete;
  OutputFiles& operator=(const OutputFiles&) = delete;

  // Creates `folder` and its missing parents (checked as check_output_folder); the folders made are
  // removed again unless the set is committed.
  void create_folder(const std::string& folder, const std::string& option);
  // Checks `path` (checked_output_file; a file this set already writes is refused) and writes its
  // content now, streamed by `write`, into a temporary. An exception from `write` removes that
  // temporary and propagates; a failed write throws sim::ConfigError naming the path and the error.
  void add(const std::string& path, const std::string& option, const std::function<void(std::ostream&)>& write);
  void add(const std::string& path, const std::string& option, std::string_view text);
  // Renames every temporary over its target, all or none (see above). Returns the targets.
  std::vector<std::string> commit();

 private:
  struct Staged {
    std::string option;     // names it in errors
    std::string target;     // where the file goes (a link resolved)
    std::string temporary;  // where it was written
    std::string backup;     // commit(): a hard link to the target's previous file, if there was one
    bool replaces;          // commit(): the target existed (a regular file)
  };
  void roll_back(std::size_t renamed) noexcept;

  std::vector<Staged> staged_;
  std::vector<std::string> created_folders_;  // parents first
};

// One output file as an OutputFiles of one.
void write_output_file(const std::string& path, std::string_view text, const std::string& option);
void write_output_file(const std::string& path, const std::function<void(std::ostream&)>& write,
                       const std::string& option);

}  // namespace megasim::scenarios
