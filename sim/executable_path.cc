#include "sim/executable_path.h"

#include <unistd.h>

#include <array>

namespace megasim::sim {

std::optional<std::string> executable_path() {
  std::array<char, 4096> self{};
  const ssize_t length = readlink("/proc/self/exe", self.data(), self.size() - 1);
  if (length <= 0 || static_cast<std::size_t>(length) >= self.size() - 1) return std::nullopt;
  return std::string(self.data(), static_cast<std::size_t>(length));
}

}  // namespace megasim::sim
