// One init function per area of the public API, all called from the single PYBIND11_MODULE.
#pragma once

#include <pybind11/pybind11.h>

namespace megasim::bindings {

void init_scenario(pybind11::module_& m);
void init_studies(pybind11::module_& m);
void init_run(pybind11::module_& m);
void init_sweep(pybind11::module_& m);
void init_files(pybind11::module_& m);
void init_campaign(pybind11::module_& m);

}  // namespace megasim::bindings
