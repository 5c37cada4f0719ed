#include <pybind11/stl.h>

#include "bindings/init.h"
#include "scenarios/api.h"

namespace py = pybind11;

namespace megasim::bindings {

void init_scenario(py::module_& m) {
  py::class_<scenarios::Scenario>(m, "Scenario", "A study's inputs: cluster, fabric, collective and plan keys")
      .def(py::init<>())
      .def_static(
          "from_toml", [](const std::string& text) { return scenarios::load_scenario_text(text, "<toml>"); },
          py::arg("text"), "Builds a scenario from TOML text over the defaults")
      .def(
          "set",
          [](scenarios::Scenario& s, const std::string& key, const std::string& value) {
            scenarios::apply_override(s, key + "=" + value);
          },
          py::arg("key"), py::arg("value"), "Sets section.key from its text form, as --set does")
      .def(
          "get",
          [](const scenarios::Scenario& s, const std::string& key) {
            const std::size_t dot = key.find('.');
            const scenarios::KeySpec& spec =
                scenarios::find_key(key.substr(0, dot), dot == std::string::npos ? "" : key.substr(dot + 1));
            return spec.get(s);
          },
          py::arg("key"), "The value of section.key")
      .def("validate", [](const scenarios::Scenario& s) { scenarios::validate(s); });
  m.def("load", &scenarios::load_scenario_file, py::arg("path"), "Loads a scenario TOML file");
  m.def("keys", &scenarios::describe_keys, "The table of every scenario key");
}

}  // namespace megasim::bindings
