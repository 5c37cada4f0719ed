#include "cli/measure_options.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <thread>

#include "cli/process_args.h"
#include "scenarios/config/input_file.h"
#include "scenarios/config/output_files.h"
#include "sim/error.h"

namespace megasim::cli {
namespace {

constexpr auto kIdFileWait = std::chrono::seconds(120);

}  // namespace

backend::MeasureOptions measure_options(int warmup_iterations, int iterations, std::chrono::milliseconds timeout) {
  backend::MeasureOptions o;
  o.warmup_iterations = warmup_iterations;
  o.iterations = iterations;
  o.timeout = timeout;
  o.relaunch = {process_args().argc, process_args().argv};
  o.file_exchange = nccl_id_file_exchange();
  return o;
}

backend::ProbeOptions probe_options(int repetitions) {
  backend::ProbeOptions o;
  o.repetitions = repetitions;
  o.relaunch = {process_args().argc, process_args().argv};
  o.file_exchange = nccl_id_file_exchange();
  return o;
}

backend::SharedFileExchange nccl_id_file_exchange() {
  return [](int rank, std::span<char> bytes) {
    const char* path = std::getenv("MEGASIM_NCCL_ID_FILE");  // NOLINT(concurrency-mt-unsafe)
    if (path == nullptr || *path == '\0') {
      throw sim::ConfigError("MEGASIM_NCCL_ID_FILE", "",
                             "a file path on a filesystem every rank shares (launched with RANK/WORLD_SIZE, rank 0 "
                             "writes the NCCL id there), or start the job with mpirun or srun");
    }
    const std::string file = path;
    if (rank == 0) {
      scenarios::write_output_file(file, std::string_view(bytes.data(), bytes.size()), "MEGASIM_NCCL_ID_FILE");
      return;
    }
    const auto deadline = std::chrono::steady_clock::now() + kIdFileWait;
    while (true) {
      std::error_code ec;
      if (std::filesystem::exists(file, ec)) {
        const std::string text = scenarios::read_input_file(file, "MEGASIM_NCCL_ID_FILE",
                                                            "a file rank 0 writes the NCCL id into", bytes.size());
        if (text.size() == bytes.size()) {
          std::copy(text.begin(), text.end(), bytes.begin());
          return;
        }
      }
      if (std::chrono::steady_clock::now() > deadline) {
        throw sim::ConfigError("MEGASIM_NCCL_ID_FILE", file, "a file rank 0 writes within 120 s (none appeared)");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  };
}

}  // namespace megasim::cli
