// Files for the pure-Python side (megasim.plot, megasim.sweeps.read_csv): the input check and the
// output writer every C++ reader and writer uses (scenarios/config/input_file.h,
// scenarios/config/output_files.h), so a FIFO, device or folder is refused from Python as from the
// command line, and a PNG appears whole or not at all.
#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "bindings/init.h"
#include "scenarios/config/input_file.h"
#include "scenarios/config/output_files.h"

namespace py = pybind11;

namespace megasim::bindings {

void init_files(py::module_& m) {
  m.def(
      "_check_input_file",
      [](const std::string& path, const std::string& key, const std::string& expected, std::uint64_t max_bytes) {
        const scenarios::InputFile file(path, key, expected, max_bytes);
      },
      py::arg("path"), py::arg("key"), py::arg("expected"), py::arg("max_bytes") = scenarios::kMaxTraceFileBytes,
      "Refuses (ValueError, as the CLI) a path that is not a regular file of at most max_bytes");
  m.def(
      "_checked_output_file",
      [](const std::string& path, const std::string& option) { return scenarios::checked_output_file(path, option); },
      py::arg("path"), py::arg("option"), "Refuses an output path as the CLI does; returns where it will be written");
  m.def(
      "_write_output_file",
      [](const std::string& path, const std::string& option, const py::bytes& data) {
        const std::string bytes = data;
        py::gil_scoped_release release;
        scenarios::write_output_file(path, std::string_view(bytes), option);
      },
      py::arg("path"), py::arg("option"), py::arg("data"),
      "Writes `data` to `path` whole or not at all (GIL released), refusing what the CLI refuses");
}

}  // namespace megasim::bindings
