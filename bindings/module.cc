#include <pybind11/pybind11.h>

#include <string>

#include "bindings/init.h"
#include "scenarios/report/build_info.h"
#include "sim/error.h"

megasim::scenarios::TopologyCache& megasim::bindings::process_topologies() {
  static scenarios::TopologyCache topologies;
  return topologies;
}

PYBIND11_MODULE(_megasim, m) {
  m.doc() = "megasim: simulate large-scale LLM training clusters (C++ core)";
  // User-input errors become ValueError with the same message as the CLI prints.
  pybind11::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const megasim::sim::ConfigError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });
  megasim::bindings::init_scenario(m);
  megasim::bindings::init_studies(m);
  megasim::bindings::init_run(m);
  megasim::bindings::init_sweep(m);
  megasim::bindings::init_files(m);
  megasim::bindings::init_campaign(m);
  m.attr("__version__") = std::string(megasim::scenarios::megasim_version());
  m.attr("__commit__") = std::string(megasim::scenarios::megasim_commit());
}
