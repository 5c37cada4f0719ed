// The catalogue of hostile inputs: one table per class of input (output paths, input files, numbers,
// memory bounds, lists, ...), each in a file of its own (`<class>_cases.cc`) that registers its
// cases at static-initialisation time; hostile_catalogue_test.cc runs every registered case.
//
// A case runs `megasim ARGS` under `sh -c` in a fresh folder of its own (so ARGS may redirect, e.g.
// `> /dev/full`), after SETUP (shell commands in that folder: mkfifo, ln -s, files to read). It
// passes when megasim exits with `exit_code` within `timeout_s` (a hang fails, so does a signal),
// its output (both streams) holds every string of `output_has`, CHECK (a shell command run in the
// folder afterwards, when given) exits 0, and, unless `may_write` is set, the folder holds exactly
// the paths it held before the run (nothing half-written left behind, nothing replaced by a new
// file: the listing records each path's type, so a FIFO replaced by a regular file shows). ULIMIT,
// when given, is applied (`ulimit ULIMIT`, in the same shell) to megasim's run alone.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace megasim::hostile {

struct HostileCase {
  std::string name = {};  // a gtest name: letters, digits and underscores
  std::string args = {};  // after "megasim"; {S}: the case's scenario.toml, {175B}: MegaScale's 175B file
  std::string toml = {};  // written to scenario.toml first when not empty
  std::vector<std::string> output_has = {};  // each must appear in the output
  std::string setup = {};                    // shell commands run in the folder before megasim
  std::string check = {};                    // shell command run in the folder after; must exit 0
  int exit_code = 2;                         // 2: bad input, refused
  int timeout_s = 60;                        // longer is a hang
  bool may_write = false;                    // the run may add or change paths in the folder
  std::string ulimit = {};                   // e.g. "-f 64": files of at most 64 x 512 bytes (sh)
};

// gtest prints a case by its name.
inline void PrintTo(const HostileCase& c, std::ostream* os) {
  *os << c.name;
}

// Adds cases to the catalogue; call from a static initialiser (see register_cases below).
void add_cases(const std::vector<HostileCase>& cases);
// Every registered case, in registration order within a file.
const std::vector<HostileCase>& all_cases();

// `const bool registered = megasim::hostile::register_cases({...});` at namespace scope in a
// `<class>_cases.cc` registers that file's table.
inline bool register_cases(const std::vector<HostileCase>& cases) {
  add_cases(cases);
  return true;
}

}  // namespace megasim::hostile
