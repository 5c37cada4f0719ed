// A file read through a read-only memory mapping (POSIX mmap), so a trace of GBs is lexed in place
// rather than copied into a string. Pages already read can be handed back to the kernel, so a
// front-to-back reader keeps a small resident set whatever the file's size.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace megasim::scenarios {

class MappedFile {
 public:
  // Throws sim::ConfigError(`key`, path, `expected` and why) for what InputFile refuses (a directory,
  // device, FIFO, or a file above kMaxTraceFileBytes: input_file.h) or when it cannot be mapped.
  MappedFile(const std::string& path, const std::string& key, const std::string& expected);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  // The file's bytes; valid while the MappedFile lives.
  [[nodiscard]] std::string_view text() const { return {data_, size_}; }

  // The bytes before `offset` will not be read again soon: their pages leave the resident set (they
  // stay readable, from the page cache or the disk). Steps of at least 64 MiB, so calls are cheap.
  void release_before(std::size_t offset);

 private:
  char* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t released_ = 0;  // bytes from the start already handed back
};

}  // namespace megasim::scenarios
