// The cpu backend behind the Backend interface (backend/backend.h): a job of one MPI process per
// rank of the plan, each playing its rank's program (cpu_backend.h).
#pragma once

#include <memory>

#include "backend/backend.h"

namespace megasim::backend::cpu {

std::unique_ptr<Backend> make_cpu_backend();

}  // namespace megasim::backend::cpu
