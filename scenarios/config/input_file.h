// Files a user names as inputs: scenario and calibration TOML (read whole) and traces (memory-mapped,
// mapped_file.h). Every reader opens them here, so every reader refuses the same things, before any
// byte is read: an empty path, a missing or unreadable file, a directory, a device (/dev/zero), a
// FIFO or a socket (none is a file of a known size: each would block the open or grow without
// bound), and a file larger than the reader's bound. A link is followed to what it names.
#pragma once

#include <cstdint>
#include <string>

namespace megasim::scenarios {

// A scenario or calibration file: hand-written TOML is kilobytes (the largest shipped one is under
// 3 KB); 64 MiB leaves room for generated files with tables of measurements and bounds the text
// and the TOML parser's tree (a few times the text) at a fraction of a workstation's memory.
inline constexpr std::uint64_t kMaxTomlFileBytes = std::uint64_t{64} << 20;
// A trace read back by `whatif`: mapped, not copied, and lexed in one pass, so memory grows with the
// records kept, not the file. The bound is for time and address space: the 175B trace at 12,288 GPUs
// is 3.7 GB (about 300 KB per rank), so a 131,072-GPU trace of a plan with three times the ops per
// rank stays near 120 GB; 256 GiB admits it and refuses a sparse or runaway file of TBs.
inline constexpr std::uint64_t kMaxTraceFileBytes = std::uint64_t{256} << 30;

// An input file opened read-only after the checks above. Throws sim::ConfigError(key, path, ...) whose
// "expected" part is `expected` followed by the reason ("(it is a directory)", "(it holds 80 MiB;
// at most 64 MiB)").
class InputFile {
 public:
  InputFile(const std::string& path, const std::string& key, const std::string& expected, std::uint64_t max_bytes);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  [[nodiscard]] int fd() const { return fd_; }
  // The size when opened (a regular file's, so known before reading).
  [[nodiscard]] std::uint64_t size() const { return size_; }

 private:
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

// The whole text of an input file checked as InputFile does (a file that grows while it is read is
// read up to its size at the open). Throws sim::ConfigError(key, path, ...) when it cannot be read.
std::string read_input_file(const std::string& path, const std::string& key, const std::string& expected,
                            std::uint64_t max_bytes = kMaxTomlFileBytes);

}  // namespace megasim::scenarios
