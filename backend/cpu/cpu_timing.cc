#include "backend/cpu/cpu_timing.h"
