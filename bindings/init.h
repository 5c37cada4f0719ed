// One init function per area of the public API, all called from the single PYBIND11_MODULE.
#pragma once

#include <pybind11/pybind11.h>

#include "scenarios/studies/topology_cache.h"

namespace megasim::bindings {

void init_scenario(pybind11::module_& m);
void init_studies(pybind11::module_& m);
void init_run(pybind11::module_& m);
void init_sweep(pybind11::module_& m);
void init_files(pybind11::module_& m);
void init_campaign(pybind11::module_& m);

// The topologies of this process's studies (a pool's worker runs many plans of one sweep, or many
// tasks of one campaign, nearly always on one cluster). Holds at most TopologyCache::kKept clusters.
scenarios::TopologyCache& process_topologies();

}  // namespace megasim::bindings
