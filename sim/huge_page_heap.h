// Transparent huge pages for the heap of a large simulation.
//
// A 12,288-GPU iteration keeps ~130 MB of small heap records (flows, cached routes, link lists) that
// the fabric reads at random, so with 4 KiB pages most of those reads also miss the TLB. glibc backs
// its heap with transparent huge pages when its tunable `glibc.malloc.hugetlb=1` is set (glibc 2.35+;
// the kernel's THP mode "madvise" suffices), but tunables are read only when a process starts. A
// program that wants them therefore re-executes itself once with the tunable added (what it saves
// at 12,288 GPUs: bench/README.md).
#pragma once

#include <optional>
#include <string>

namespace megasim::sim {

// The value GLIBC_TUNABLES should have for a huge-page heap, given its current value (null: unset):
// the current value with `glibc.malloc.hugetlb=1` appended; nullopt when it already names
// `glibc.malloc.hugetlb` (set by the user, or by an earlier re-execution).
[[nodiscard]] std::optional<std::string> tunables_with_huge_page_heap(const char* current);

// Re-executes this program (/proc/self/exe, same arguments) with GLIBC_TUNABLES from
// tunables_with_huge_page_heap. Call it first thing in main(). Returns, changing nothing, when the
// tunable is already set, when MEGASIM_HUGE_PAGES=0, under valgrind (whose tools would lose the
// child), or when the exec fails; otherwise does not return.
void reexec_with_huge_page_heap(char** argv);

// Keeps the memory the program frees for its own reuse. By default glibc unmaps every freed block
// above its mmap threshold (which it raises as such blocks are freed, up to 32 MiB) and trims the
// heap's top, so the vectors a large simulation grows and drops are faulted in again, with huge pages
// zeroed 2 MiB at a time, over and over. Sets the mmap threshold to its maximum (32 MiB on 64-bit)
// and turns trimming off (its effect on the 12,288-GPU iteration's page faults and wall time:
// bench/README.md). Returns whether glibc took both settings. Call it early in main(); memory in use
// is not affected.
bool keep_freed_heap_memory();

}  // namespace megasim::sim
