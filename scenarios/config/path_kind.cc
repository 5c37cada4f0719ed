#include "scenarios/config/path_kind.h"

#include <sys/stat.h>

#include <cctype>
#include <system_error>

namespace megasim::scenarios {

std::string path_kind(unsigned mode) {
  switch (mode & S_IFMT) {
    case S_IFREG:
      return "a regular file";
    case S_IFDIR:
      return "a directory";
    case S_IFIFO:
      return "a FIFO";
    case S_IFCHR:
      return "a character device";
    case S_IFBLK:
      return "a block device";
    case S_IFSOCK:
      return "a socket";
    case S_IFLNK:
      return "a symbolic link";
    default:
      return "not a regular file";
  }
}

std::string errno_text(int error) {
  std::string text = std::error_code(error, std::generic_category()).message();  // thread-safe, unlike strerror
  if (!text.empty()) text[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(text[0])));
  return text;
}

}  // namespace megasim::scenarios
