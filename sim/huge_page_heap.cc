#include "sim/huge_page_heap.h"

#include <malloc.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string_view>

#include "sim/executable_path.h"

namespace megasim::sim {

namespace {
constexpr std::string_view kTunable = "glibc.malloc.hugetlb";
}  // namespace

std::optional<std::string> tunables_with_huge_page_heap(const char* current) {
  const std::string_view now = current == nullptr ? std::string_view() : std::string_view(current);
  if (now.find(kTunable) != std::string_view::npos) return std::nullopt;
  std::string value(now);
  if (!value.empty()) value += ':';
  value += kTunable;
  value += "=1";
  return value;
}

void reexec_with_huge_page_heap(char** argv) {
  const char* opt_out = std::getenv("MEGASIM_HUGE_PAGES");
  if (opt_out != nullptr && std::strcmp(opt_out, "0") == 0) return;
  // Valgrind preloads its own libraries into the program it runs; an exec would leave the tool.
  const char* preload = std::getenv("LD_PRELOAD");
  if (preload != nullptr && std::strstr(preload, "vgpreload") != nullptr) return;
  const char* current = std::getenv("GLIBC_TUNABLES");
  const std::optional<std::string> tunables = tunables_with_huge_page_heap(current);
  if (!tunables) return;
  const std::optional<std::string> before = current == nullptr ? std::nullopt : std::optional<std::string>(current);
  const std::optional<std::string> self = executable_path();
  if (!self) return;
  if (setenv("GLIBC_TUNABLES", tunables->c_str(), 1) != 0) return;
  execv(self->c_str(), argv);
  // The exec failed: run on as started, with the environment as it was.
  if (before) {
    setenv("GLIBC_TUNABLES", before->c_str(), 1);
  } else {
    unsetenv("GLIBC_TUNABLES");
  }
}

bool keep_freed_heap_memory() {
  constexpr int kLargestMmapThreshold = 32 * 1024 * 1024;  // glibc's DEFAULT_MMAP_THRESHOLD_MAX (64-bit)
  const bool mmap_set = mallopt(M_MMAP_THRESHOLD, kLargestMmapThreshold) == 1;
  const bool trim_set = mallopt(M_TRIM_THRESHOLD, -1) == 1;  // -1: never trim (glibc's documented value)
  return mmap_set && trim_set;
}

}  // namespace megasim::sim
