#include "scenarios/config/mapped_file.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>

#include "scenarios/config/input_file.h"
#include "scenarios/config/path_kind.h"
#include "sim/error.h"

namespace megasim::scenarios {
namespace {

constexpr std::size_t kReleaseStep = std::size_t{64} << 20;

}  // namespace

MappedFile::MappedFile(const std::string& path, const std::string& key, const std::string& expected) {
  const InputFile file(path, key, expected, kMaxTraceFileBytes);
  size_ = static_cast<std::size_t>(file.size());
  if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, file.fd(), 0);
    if (p == MAP_FAILED) throw sim::ConfigError(key, path, expected + " (" + errno_text(errno) + ")");
    ::madvise(p, size_, MADV_SEQUENTIAL);
    data_ = static_cast<char*>(p);
  }
  // `file` closes here: the mapping keeps the file's pages.
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
