#include "scenarios/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sim/error.h"

namespace megasim::scenarios {
namespace {

constexpr std::size_t kReleaseStep = std::size_t{64} << 20;

}  // namespace

MappedFile::MappedFile(const std::string& path, const std::string& key, const std::string& expected) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw sim::ConfigError(key, path, expected);
  struct stat info {};
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(fd);
    throw sim::ConfigError(key, path, expected);
  }
  size_ = static_cast<std::size_t>(info.st_size);
  if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      ::close(fd);
      throw sim::ConfigError(key, path, expected);
    }
    ::madvise(p, size_, MADV_SEQUENTIAL);
    data_ = static_cast<char*>(p);
  }
  ::close(fd);  // the mapping keeps the file
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(data_, size_);
}

void MappedFile::release_before(std::size_t offset) {
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t end = offset / page * page;
  if (data_ == nullptr || end < released_ + kReleaseStep) return;
  ::madvise(data_ + released_, end - released_, MADV_DONTNEED);
  released_ = end;
}

}  // namespace megasim::scenarios
