// Scenario: built from TOML text, a TOML file or a nested dict of sections → keys, all through the
// key table (scenarios/config/keys.h), so every way gives the same Scenario and the same errors.
#include <pybind11/stl.h>

#include <string>

#include "backend/registry.h"
#include "bindings/init.h"
#include "scenarios/api.h"
#include "sim/error.h"

namespace py = pybind11;

namespace megasim::bindings {
namespace {

// The name of a Python object's type, for messages ("a list", "a NoneType").
std::string type_name(py::handle v) {
  return py::str(py::type::of(v).attr("__name__"));
}

// A key given from Python; anything but a str is the error a bad key is (ValueError), not a TypeError.
std::string key_text(py::handle key) {
  if (!py::isinstance<py::str>(key)) {
    throw sim::ConfigError("key", "(a " + type_name(key) + ")", "a str section.key, e.g. \"cluster.gpus\"");
  }
  return key.cast<std::string>();
}

// "section.key" → its KeySpec; throws sim::ConfigError as find_key, or for a name without a dot.
const scenarios::KeySpec& key_spec(const std::string& key) {
  const std::size_t dot = key.find('.');
  if (dot == std::string::npos) throw sim::ConfigError("key", "\"" + key + "\"", "section.key, e.g. cluster.gpus");
  return scenarios::find_key(key.substr(0, dot), key.substr(dot + 1));
}

// A Python scalar as a Value, as the TOML loader reads a TOML scalar (bool before int: Python's bool
// is an int; numpy integers through __index__). Tables, lists and other objects are the loader's
// error for a TOML table or array.
// An integer beyond 64 bits is refused as the TOML loader refuses one (not pybind11's RuntimeError).
scenarios::Value to_value(py::handle v, const std::string& key) {
  if (py::isinstance<py::bool_>(v)) return v.cast<bool>();
  if (py::isinstance<py::float_>(v)) return v.cast<double>();
  if (py::isinstance<py::str>(v)) return v.cast<std::string>();
  if (py::isinstance<py::int_>(v) || py::hasattr(v, "__index__")) {
    const py::int_ integer = py::reinterpret_steal<py::int_>(PyNumber_Index(v.ptr()));
    if (!integer) throw py::error_already_set();
    int overflow = 0;
    const long long x = PyLong_AsLongLongAndOverflow(integer.ptr(), &overflow);
    if (overflow != 0) {
      throw sim::ConfigError(key, std::string(py::repr(integer)), "an integer from -2^63 to 2^63-1");
    }
    return static_cast<std::int64_t>(x);
  }
  throw sim::ConfigError(key, "(a " + type_name(v) + ")", "a single integer, number, boolean or string");
}

void set_value(scenarios::Scenario& s, const scenarios::KeySpec& spec, py::handle value) {
  spec.set(s, scenarios::coerce(spec, to_value(value, spec.full_name())));
}

// {section: {key: value}} over the defaults; unknown sections and keys and wrong types are errors
// naming them, as in a TOML file.
scenarios::Scenario from_dict(const py::object& object) {
  if (!py::isinstance<py::dict>(object)) {
    throw sim::ConfigError("sections", "(a " + type_name(object) + ")",
                           "a dict {section: {key: value}}, as a TOML file's tables");
  }
  scenarios::Scenario s;
  for (const auto& [section_obj, keys] : object.cast<py::dict>()) {
    const std::string section = py::str(section_obj);
    if (!py::isinstance<py::dict>(keys)) {
      throw sim::ConfigError(section, "(a bare key)", "keys inside sections such as [cluster] or [fabric]");
    }
    for (const auto& [name, value] : keys.cast<py::dict>()) {
      set_value(s, scenarios::find_key(section, py::str(name).cast<std::string>()), value);
    }
  }
  return s;
}

// Every key, {section: {key: value}}, in the key table's order.
py::dict to_dict(const scenarios::Scenario& s) {
  py::dict sections;
  for (const scenarios::KeySpec& spec : scenarios::key_table()) {
    const py::str section(std::string(spec.section));
    if (!sections.contains(section)) sections[section] = py::dict();
    sections[section][py::str(std::string(spec.name))] = py::cast(spec.get(s));
  }
  return sections;
}

bool equal(const scenarios::Scenario& a, const scenarios::Scenario& b) {
  for (const scenarios::KeySpec& spec : scenarios::key_table()) {
    if (spec.get(a) != spec.get(b)) return false;
  }
  return true;
}

}  // namespace

void init_scenario(py::module_& m) {
  py::class_<scenarios::Scenario>(m, "Scenario",
                                  "A study's inputs: every key of `megasim keys`, grouped in sections (cluster, "
                                  "fabric, model, plan, ...); Scenario() holds the defaults")
      .def(py::init<>())
      .def_static(
          "from_toml",
          [](const py::object& text) {
            if (!py::isinstance<py::str>(text)) {
              throw sim::ConfigError("text", "(a " + type_name(text) + ")", "TOML text as a str");
            }
            return scenarios::load_scenario_text(text.cast<std::string>(), "<toml>");
          },
          py::arg("text"), "Builds a scenario from TOML text over the defaults")
      .def_static("from_dict", &from_dict, py::arg("sections"),
                  "Builds a scenario from {section: {key: value}} over the defaults, as from the same TOML")
      .def("to_dict", &to_dict, "Every key's value as {section: {key: value}}; from_dict of it gives this scenario")
      .def(
          "set",
          [](scenarios::Scenario& s, const py::object& key_object, const py::object& value) {
            const std::string key = key_text(key_object);
            if (py::isinstance<py::str>(value)) {
              scenarios::apply_override(s, key + "=" + value.cast<std::string>());
            } else {
              set_value(s, key_spec(key), value);
            }
          },
          py::arg("key"), py::arg("value"),
          "Sets section.key: a str is parsed as `--set section.key=value` parses it; an int, float or bool "
          "is taken as is (an int for a float key too)")
      .def(
          "get", [](const scenarios::Scenario& s, const py::object& key) { return key_spec(key_text(key)).get(s); },
          py::arg("key"), "The value of section.key")
      .def("validate", [](const scenarios::Scenario& s) { scenarios::validate(s); })
      .def("__eq__", &equal, py::is_operator())
      .def("copy", [](const scenarios::Scenario& s) { return s; })
      .def("__copy__", [](const scenarios::Scenario& s) { return s; })
      .def("__deepcopy__", [](const scenarios::Scenario& s, const py::dict&) { return s; })
      // Pickled as its dict, so scenarios travel to process pools and cluster executors.
      .def(py::pickle(&to_dict, [](const py::dict& d) { return from_dict(d); }));
  m.def("load", &scenarios::load_scenario_file, py::arg("path"),
        "Loads a scenario TOML file (a regular file of at most 64 MiB: scenarios/config/input_file.h)");
  m.def("_keys_json", &scenarios::keys_json, "The table of every scenario key as `megasim keys --json`");
  m.def("_keys_text", &scenarios::describe_keys, "The table of every scenario key as `megasim keys` prints it");
  m.def("_available_backends", &backend::available_backends,
        "The backends this megasim was built with (backend/registry.h): sim, cpu and, when built, cuda");
}

}  // namespace megasim::bindings
