#include "sim/huge_page_heap.h"

#include <gtest/gtest.h>

namespace megasim::sim {
namespace {

TEST(HugePageHeap, AddsTheTunableWhenUnset) {
  EXPECT_EQ(tunables_with_huge_page_heap(nullptr), "glibc.malloc.hugetlb=1");
  EXPECT_EQ(tunables_with_huge_page_heap(""), "glibc.malloc.hugetlb=1");
}

TEST(HugePageHeap, KeepsTheUsersOtherTunables) {
  EXPECT_EQ(tunables_with_huge_page_heap("glibc.malloc.arena_max=1"),
            "glibc.malloc.arena_max=1:glibc.malloc.hugetlb=1");
}

TEST(HugePageHeap, LeavesAnExplicitChoiceAlone) {
  // Whatever the user chose, including 0, and the value set by the re-execution itself (no loop).
  EXPECT_FALSE(tunables_with_huge_page_heap("glibc.malloc.hugetlb=0").has_value());
  EXPECT_FALSE(tunables_with_huge_page_heap("glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1").has_value());
}

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitizerAllocator = true;  // GCC's -fsanitize=address
#elif defined(__has_feature)
constexpr bool kSanitizerAllocator = __has_feature(address_sanitizer);  // Clang's
#else
constexpr bool kSanitizerAllocator = false;
#endif

TEST(HugePageHeap, GlibcTakesTheSettingsThatKeepFreedMemory) {
  if (kSanitizerAllocator) GTEST_SKIP() << "AddressSanitizer's allocator replaces glibc's and ignores mallopt";
  // mallopt refuses an mmap threshold above its maximum: this fails if the constant is out of range.
  EXPECT_TRUE(keep_freed_heap_memory());
}

}  // namespace
}  // namespace megasim::sim
