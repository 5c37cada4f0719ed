#include "backend/cpu/mpi_launch.h"
