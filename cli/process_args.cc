#include "cli/process_args.h"

namespace megasim::cli {

ProcessArgs& process_args() {
  static ProcessArgs args;
  return args;
}

}  // namespace megasim::cli
