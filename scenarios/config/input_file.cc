#include "scenarios/config/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "scenarios/config/path_kind.h"
#include "scenarios/config/units.h"
#include "sim/error.h"

namespace megasim::scenarios {
namespace {

sim::ConfigError refused(const std::string& path, const std::string& key, const std::string& expected,
                         const std::string& why) {
  return {key, path.empty() ? "\"\"" : path, expected + " (" + why + ")"};
}

}  // namespace

InputFile::InputFile(const std::string& path, const std::string& key, const std::string& expected,
                     std::uint64_t max_bytes) {
  if (path.empty()) throw refused(path, key, expected, "an empty path names no file");
  // stat before open: opening a FIFO waits for a writer, and opening a device may act on it.
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) throw refused(path, key, expected, errno_text(errno));
  if (!S_ISREG(info.st_mode)) throw refused(path, key, expected, "it is " + path_kind(info.st_mode));
  // O_NONBLOCK: should the path have become a FIFO since the stat, the open still returns (and the
  // fstat refuses it); for a regular file it changes nothing.
  fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd_ < 0) throw refused(path, key, expected, errno_text(errno));
  if (::fstat(fd_, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(fd_);
    throw refused(path, key, expected, "it is " + path_kind(info.st_mode));
  }
  size_ = static_cast<std::uint64_t>(info.st_size);
  if (size_ > max_bytes) {
    ::close(fd_);
    throw refused(path, key, expected,
                  "it holds " + format_bytes(static_cast<double>(size_)) + "; at most " +
                      format_bytes(static_cast<double>(max_bytes)));
  }
}

InputFile::~InputFile() {
  ::close(fd_);
}

std::string read_input_file(const std::string& path, const std::string& key, const std::string& expected,
                            std::uint64_t max_bytes) {
  const InputFile file(path, key, expected, max_bytes);
  std::string text(static_cast<std::size_t>(file.size()), '\0');
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::read(file.fd(), text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw refused(path, key, expected, errno_text(errno));
    if (n == 0) break;  // the file shrank since the open: what is there is its text
    done += static_cast<std::size_t>(n);
  }
  text.resize(done);
  return text;
}

}  // namespace megasim::scenarios
