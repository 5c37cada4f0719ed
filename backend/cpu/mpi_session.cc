#include "backend/cpu/mpi_session.h"
