#include "backend/cpu/cpu_kernels.h"
