// The main of megasim_mpi_tests, a job of MPI processes that all run every test: MPI lives for the
// whole run, rank 0 alone prints GoogleTest's report (other ranks print only their failures, tagged
// with their rank), and the job fails on every rank when a test failed on any.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>

#include "backend/mpi/mpi_session.h"

namespace {

class RankFailurePrinter : public testing::EmptyTestEventListener {
 public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::fprintf(stderr, "[rank %d] %s:%d: Failure\n%s\n", rank_, result.file_name() ? result.file_name() : "unknown",
                 result.line_number(), result.message());
  }

 private:
  int rank_;
};

}  // namespace

int main(int argc, char** argv) {
  const megasim::backend::mpi::MpiSession session(&argc, &argv);
  testing::InitGoogleTest(&argc, argv);
  if (session.rank() != 0) {
    testing::TestEventListeners& listeners = testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new RankFailurePrinter(session.rank()));
  }
  const int failed_here = RUN_ALL_TESTS() != 0 ? 1 : 0;
  int failed_anywhere = 1;
  MPI_Allreduce(&failed_here, &failed_anywhere, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (session.rank() == 0 && failed_anywhere != 0 && failed_here == 0) {
    std::fprintf(stderr, "Tests failed on another rank: see the [rank N] lines.\n");
  }
  return failed_anywhere;
}
