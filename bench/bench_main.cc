// main() of the benchmark programs: Google Benchmark's, after the re-execution that gives the heap
// huge pages as megasim's own main() does (sim/huge_page_heap.h), so that the figures are the CLI's.
#include <benchmark/benchmark.h>

#include "sim/huge_page_heap.h"

int main(int argc, char** argv) {
  megasim::sim::reexec_with_huge_page_heap(argv);
  megasim::sim::keep_freed_heap_memory();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
