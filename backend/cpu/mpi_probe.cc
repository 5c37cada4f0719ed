#include "backend/cpu/mpi_probe.h"
