#include "scenarios/config/output_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <ostream>
#include <streambuf>
#include <utility>
#include <vector>

#include "scenarios/config/path_kind.h"
#include "sim/error.h"

namespace megasim::scenarios {
namespace {

namespace fs = std::filesystem;

// Bytes gathered per write(2). Small enough to stay in L2 while the kernel copies it into the page
// cache: a 1 MiB buffer made the 463 MB trace of the 1,024-GPU 175B run cost 0.8-1.0 s of system
// time against 0.20-0.21 s with 64 KiB (2 cores, 512 KiB L2 each, 2026-12-02).
constexpr std::size_t kWriteBufferBytes = std::size_t{64} << 10;
constexpr int kNameAttempts = 100;

sim::ConfigError refused(const std::string& option, const std::string& path, const std::string& valid) {
  return {option, path.empty() ? "\"\"" : path, valid};
}

// The folder a file path lies in ("." for a bare name).
std::string folder_of(const std::string& path) {
  const fs::path folder = fs::path(path).parent_path();
  return folder.empty() ? "." : folder.string();
}

// Refuses a folder that does not exist, is not one, or cannot be written in (to create and rename
// files there).
void require_writable_folder(const std::string& folder, const std::string& option, const std::string& path) {
  struct stat info {};
  if (::stat(folder.c_str(), &info) != 0) {
    throw refused(option, path, "a path in an existing folder (" + folder + ": " + errno_text(errno) + ")");
  }
  if (!S_ISDIR(info.st_mode)) {
    throw refused(option, path, "a path in an existing folder (" + folder + " is " + path_kind(info.st_mode) + ")");
  }
  if (::access(folder.c_str(), W_OK | X_OK) != 0) {
    throw refused(option, path, "a path in a folder this user can write (" + folder + ": " + errno_text(errno) + ")");
  }
}

// A name no file has yet in `folder` for `base`'s temporaries: NAME.XXXXXXXX.SUFFIX. Only the
// O_EXCL create (or link) that uses it makes it unique; this just makes collisions unlikely.
std::string candidate_name(const std::string& base, const char* suffix) {
  static std::atomic<std::uint64_t> counter{0};
  const auto pid = static_cast<std::uint64_t>(::getpid());
  const auto now = static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  std::uint64_t x = (pid * std::uint64_t{0x9E3779B97F4A7C15}) ^ now ^ (counter.fetch_add(1) << 40U);
  // splitmix64's finaliser spreads the bits.
  x = (x ^ (x >> 30U)) * std::uint64_t{0xBF58476D1CE4E5B9};
  x = (x ^ (x >> 27U)) * std::uint64_t{0x94D049BB133111EB};
  x ^= x >> 31U;
  static constexpr char kDigits[] = "0123456789abcdefghijklmnopqrstuvwxyz";
  std::string tag;
  for (int i = 0; i < 8; ++i, x /= 36) tag += kDigits[x % 36];
  return base + "." + tag + "." + suffix;
}

// A std::streambuf over a file descriptor that remembers the first write error (errno).
class FdWriter : public std::streambuf {
 public:
  explicit FdWriter(int fd) : fd_(fd), buffer_(kWriteBufferBytes) {
    setp(buffer_.data(), buffer_.data() + buffer_.size());
  }
  [[nodiscard]] int error() const { return error_; }

 protected:
  int_type overflow(int_type ch) override {
    if (!drain()) return traits_type::eof();
    if (!traits_type::eq_int_type(ch, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(ch);
      pbump(1);
    }
    return traits_type::not_eof(ch);
  }
  int sync() override { return drain() ? 0 : -1; }

 private:
  bool drain() {
    const char* at = pbase();
    while (error_ == 0 && at < pptr()) {
      const ssize_t n = ::write(fd_, at, static_cast<std::size_t>(pptr() - at));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        error_ = n < 0 ? errno : EIO;
        break;
      }
      at += n;
    }
    setp(buffer_.data(), buffer_.data() + buffer_.size());
    return error_ == 0;
  }

  int fd_;
  std::vector<char> buffer_;
  int error_ = 0;
};

// Creates a new temporary for `target` in its folder, with the target's permission bits (and owner,
// as root) when it exists, else the defaults the umask gives.
int create_temporary(const std::string& target, const std::string& option, std::string& name) {
  struct stat previous {};
  const bool replaces = ::stat(target.c_str(), &previous) == 0;
  for (int attempt = 0; attempt < kNameAttempts; ++attempt) {
    name = candidate_name(target, "partial");
    const int fd = ::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666);
    if (fd < 0 && errno == EEXIST) continue;
    if (fd < 0) throw refused(option, target, "a path this user can write (" + errno_text(errno) + ")");
    if (replaces) {
      static_cast<void>(::fchmod(fd, previous.st_mode & 07777));
      if (::geteuid() == 0) static_cast<void>(::fchown(fd, previous.st_uid, previous.st_gid));
    }
    return fd;
  }
  throw refused(option, target, "a folder where a temporary name can be found (100 tries failed)");
}

// Whether two targets are one file: the same path, or one file under two names.
bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  if (fs::absolute(a, ec).lexically_normal() == fs::absolute(b, ec).lexically_normal()) return true;
  struct stat x {
  }, y{};
  return ::stat(a.c_str(), &x) == 0 && ::stat(b.c_str(), &y) == 0 && x.st_dev == y.st_dev && x.st_ino == y.st_ino;
}

}  // namespace

std::string checked_output_file(const std::string& path, const std::string& option) {
  if (path.empty()) throw refused(option, path, "a file path (an empty one names no file)");
  if (path.back() == '/') throw refused(option, path, "a file path (this one names a folder)");
  struct stat info {};
  if (::lstat(path.c_str(), &info) != 0) {
    if (errno != ENOENT) throw refused(option, path, "a file path (" + errno_text(errno) + ")");
    require_writable_folder(folder_of(path), option, path);
    return path;
  }
  std::string target = path;
  if (S_ISLNK(info.st_mode)) {
    if (::stat(path.c_str(), &info) != 0) {
      throw refused(option, path, "a link to an existing regular file (its target: " + errno_text(errno) + ")");
    }
    std::error_code ec;
    target = fs::canonical(path, ec).string();
    if (ec) throw refused(option, path, "a link that resolves (" + ec.message() + ")");
  }
  if (!S_ISREG(info.st_mode)) {
    throw refused(option, path,
                  "a new file or a regular one to replace (it is " + path_kind(info.st_mode) +
                      (target == path ? "" : ", through a link") + ")");
  }
  require_writable_folder(folder_of(target), option, path);
  return target;
}

void check_output_folder(const std::string& folder, const std::string& option) {
  if (folder.empty()) throw refused(option, folder, "a folder path (an empty one names no folder)");
  struct stat info {};
  if (::stat(folder.c_str(), &info) == 0) {
    if (!S_ISDIR(info.st_mode)) {
      throw refused(option, folder, "a folder, new or existing (it is " + path_kind(info.st_mode) + ")");
    }
    require_writable_folder(folder, option, folder);
    return;
  }
  if (errno != ENOENT) throw refused(option, folder, "a folder path (" + errno_text(errno) + ")");
  // A missing folder is created with its missing parents: the nearest that exists must be a
  // writable folder.
  std::error_code ec;
  fs::path above = fs::absolute(folder, ec).lexically_normal();
  while (above.has_relative_path() && ::stat(above.c_str(), &info) != 0 && errno == ENOENT) above = above.parent_path();
  require_writable_folder(above.string(), option, folder);
}

void check_output_files(const std::string& folder, const std::vector<std::string>& names, const std::string& option) {
  check_output_folder(folder, option);
  struct stat info {};
  if (::stat(folder.c_str(), &info) != 0) return;  // a new folder: new files
  for (const std::string& name : names) {
    static_cast<void>(checked_output_file((fs::path(folder) / name).string(), option));
  }
}

OutputFiles::~OutputFiles() {
  roll_back(0);
}

void OutputFiles::create_folder(const std::string& folder, const std::string& option) {
  check_output_folder(folder, option);
  std::vector<fs::path> missing;
  fs::path p = fs::path(folder).lexically_normal();
  if (!p.has_filename() && p.has_relative_path()) p = p.parent_path();  // "out/" is "out"
  struct stat info {};
  for (; !p.empty() && ::stat(p.c_str(), &info) != 0; p = p.parent_path()) {
    missing.push_back(p);
    if (!p.has_relative_path()) break;
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (::mkdir(it->c_str(), 0777) != 0) {
      const int error = errno;
      if (error == EEXIST && ::stat(it->c_str(), &info) == 0 && S_ISDIR(info.st_mode)) continue;  // made meanwhile
      throw refused(option, folder, "a folder that can be created (" + it->string() + ": " + errno_text(error) + ")");
    }
    created_folders_.push_back(it->string());
  }
}

void OutputFiles::add(const std::string& path, const std::string& option,
                      const std::function<void(std::ostream&)>& write) {
  const std::string target = checked_output_file(path, option);
  for (const Staged& s : staged_) {
    if (same_file(s.target, target)) {
      throw refused(option, path, "a different file for each output (" + s.option + " writes " + s.target + ")");
    }
  }
  Staged staged{.option = option, .target = target, .temporary = {}, .backup = {}, .replaces = false};
  const int fd = create_temporary(target, option, staged.temporary);
  staged_.push_back(staged);
  int error = 0;
  try {
    FdWriter buffer(fd);
    std::ostream out(&buffer);
    write(out);
    out.flush();
    error = buffer.error() != 0 ? buffer.error() : (out ? 0 : EIO);
  } catch (...) {
    ::close(fd);
    ::unlink(staged_.back().temporary.c_str());
    staged_.pop_back();
    throw;
  }
  if (::close(fd) != 0 && error == 0) error = errno;
  if (error != 0) {
    ::unlink(staged_.back().temporary.c_str());
    staged_.pop_back();
    throw refused(option, path, "a file that can be written in full (" + errno_text(error) + ")");
  }
}

void OutputFiles::add(const std::string& path, const std::string& option, std::string_view text) {
  add(path, option, [text](std::ostream& out) { out.write(text.data(), static_cast<std::streamsize>(text.size())); });
}

std::vector<std::string> OutputFiles::commit() {
  for (std::size_t i = 0; i < staged_.size(); ++i) {
    Staged& s = staged_[i];
    struct stat info {};
    s.replaces = ::lstat(s.target.c_str(), &info) == 0 && S_ISREG(info.st_mode);
    if (s.replaces) {
      // A second name for the previous file, so a failed rename further on can put it back. A
      // filesystem without hard links gets no backup: that file cannot be restored.
      for (int attempt = 0; attempt < kNameAttempts && s.backup.empty(); ++attempt) {
        std::string name = candidate_name(s.target, "previous");
        if (::link(s.target.c_str(), name.c_str()) == 0) {
          s.backup = std::move(name);
        } else if (errno != EEXIST) {
          break;
        }
      }
    }
    if (::rename(s.temporary.c_str(), s.target.c_str()) != 0) {
      const int error = errno;
      const std::string option = s.option, target = s.target;
      roll_back(i);
      throw refused(option, target, "a file that can be replaced (" + errno_text(error) + ")");
    }
  }
  std::vector<std::string> targets;
  for (const Staged& s : staged_) {
    if (!s.backup.empty()) ::unlink(s.backup.c_str());
    targets.push_back(s.target);
  }
  staged_.clear();
  created_folders_.clear();
  return targets;
}

// Undoes the first `renamed` renames (a backup goes back over its target; a new target is removed),
// removes the temporaries not renamed and the folders this set created.
void OutputFiles::roll_back(std::size_t renamed) noexcept {
  for (std::size_t i = 0; i < staged_.size(); ++i) {
    const Staged& s = staged_[i];
    if (i < renamed) {
      if (!s.backup.empty()) {
        ::rename(s.backup.c_str(), s.target.c_str());
      } else if (!s.replaces) {
        ::unlink(s.target.c_str());
      }  // else a file replaced without a backup: the new one stays
    } else {
      ::unlink(s.temporary.c_str());
      if (!s.backup.empty()) ::unlink(s.backup.c_str());
    }
  }
  staged_.clear();
  for (auto it = created_folders_.rbegin(); it != created_folders_.rend(); ++it) ::rmdir(it->c_str());
  created_folders_.clear();
}

void write_output_file(const std::string& path, std::string_view text, const std::string& option) {
  OutputFiles files;
  files.add(path, option, text);
  files.commit();
}

void write_output_file(const std::string& path, const std::function<void(std::ostream&)>& write,
                       const std::string& option) {
  OutputFiles files;
  files.add(path, option, write);
  files.commit();
}

}  // namespace megasim::scenarios
