// The command line as main() received it, for commands whose backend job re-executes them under
// mpirun (backend::MeasureOptions::relaunch).
#pragma once

namespace megasim::cli {

struct ProcessArgs {
  int argc = 0;
  char** argv = nullptr;
};
ProcessArgs& process_args();

}  // namespace megasim::cli
