#include "cli/progress_bar.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>

namespace megasim::cli {
namespace {

constexpr std::size_t kWidth = 30;

}  // namespace

ProgressBar::ProgressBar() : enabled_(isatty(STDERR_FILENO) == 1), start_(std::chrono::steady_clock::now()) {}

ProgressBar::~ProgressBar() {
  if (drawn_) std::fputs("\r\033[K", stderr);
}

void ProgressBar::update(std::string_view what, std::size_t done, std::size_t total) {
  if (!enabled_ || total == 0) return;
  if (what != what_) {
    what_ = what;
    start_ = std::chrono::steady_clock::now();
  }
  const std::size_t filled = done * kWidth / total;
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double eta = done > 0 ? elapsed * static_cast<double>(total - done) / static_cast<double>(done) : 0;
  fmt::print(stderr, "\r[{}{}] {}/{} {}, {:.0f} s, about {:.0f} s left\033[K", std::string(filled, '#'),
             std::string(kWidth - filled, ' '), done, total, what_, elapsed, eta);
  std::fflush(stderr);
  drawn_ = true;
}

}  // namespace megasim::cli
