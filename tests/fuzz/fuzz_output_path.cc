// Fuzz target: output paths (scenarios/config/output_files.h) against a folder of hostile entries.
// The input is lines: first the entries to make in a fresh private folder, then what to write
// there.
//   f NAME          a regular file holding "old"      d NAME   a folder
//   p NAME          a FIFO                            l NAME TARGET   a symbolic link NAME -> TARGET
//   w PATH [PATH2]  write PATH (and PATH2, one set)   o DIR    a folder of outputs: DIR/report.json, DIR/trace.json
// Names and targets are relative, of [A-Za-z0-9._-/], without "..", so every path stays inside the
// folder (links may dangle, loop or chain). The contract checked, beyond throwing only ConfigError:
//  - an entry that was not a regular file keeps its type (a FIFO, folder or link is never replaced);
//  - no temporary ("*.partial", "*.previous" that was not there before) is left behind;
//  - refused: the folder is exactly as before, every file's content included;
//  - written: every entry that was there is still there, each file holds "old" or what was written.
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz_target.h"
#include "scenarios/config/output_files.h"
#include "sim/error.h"

namespace megasim::fuzz {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kMaxEntries = 16;
constexpr std::size_t kMaxNameLength = 64;

// A name the harness keeps inside the folder: relative, no "..", a safe alphabet.
bool safe_name(const std::string& name) {
  if (name.empty() || name.size() > kMaxNameLength || name.front() == '/') return false;
  for (const char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                    c == '_' || c == '-' || c == '/';
    if (!ok) return false;
  }
  for (const auto& part : fs::path(name)) {
    if (part == "..") return false;
  }
  return true;
}

std::vector<std::string> words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

struct Entry {
  fs::file_type type;
  std::string content;  // regular files
};

std::map<std::string, Entry> snapshot(const fs::path& root) {
  std::map<std::string, Entry> out;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it) {
    Entry e{.type = it->symlink_status().type(), .content = {}};
    if (e.type == fs::file_type::regular) {
      std::ifstream in(it->path(), std::ios::binary);
      std::ostringstream text;
      text << in.rdbuf();
      e.content = text.str();
    }
    out[it->path().lexically_relative(root).string()] = e;
  }
  return out;
}

[[noreturn]] void violated(const char* what, const std::string& path) {
  std::fprintf(stderr, "output path contract violated: %s: %s\n", what, path.c_str());
  std::abort();
}

void make_entry(const fs::path& root, const std::vector<std::string>& w) {
  if (w.size() < 2 || w[0].size() != 1 || !safe_name(w[1])) return;
  const fs::path at = root / w[1];
  std::error_code ec;
  fs::create_directories(at.parent_path(), ec);
  switch (w[0][0]) {
    case 'f':
      std::ofstream(at, std::ios::binary) << "old";
      break;
    case 'd':
      fs::create_directory(at, ec);
      break;
    case 'p':
      ::mkfifo(at.c_str(), 0644);
      break;
    case 'l':
      if (w.size() == 3 && safe_name(w[2])) fs::create_symlink(w[2], at, ec);
      break;
    default:
      break;
  }
}

// Writes what the last line asks for; returns the contents written.
std::vector<std::string> write_outputs(const fs::path& root, const std::vector<std::string>& w) {
  scenarios::OutputFiles files;
  if (w.size() == 2 && w[0] == "o" && safe_name(w[1])) {
    const std::string dir = (root / w[1]).string();
    files.create_folder(dir, "--out");
    files.add(dir + "/report.json", "--out", "report");
    files.add(dir + "/trace.json", "--out", [](std::ostream& out) { out << "trace"; });
  } else if (w.size() >= 2 && w[0] == "w" && safe_name(w[1])) {
    files.add((root / w[1]).string(), "--csv", "first");
    if (w.size() >= 3 && safe_name(w[2])) files.add((root / w[2]).string(), "--csv2", "second");
  } else {
    return {};
  }
  files.commit();
  return {"report", "trace", "first", "second"};
}

// Whether `name` has the form of a writer's temporary: FILE.XXXXXXXX.partial or FILE.XXXXXXXX.previous.
bool temporary_name(const std::string& name) {
  for (const std::string suffix : {".partial", ".previous"}) {
    const std::size_t tag = 9;  // "." and 8 characters of [0-9a-z]
    if (name.size() < suffix.size() + tag || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) {
      continue;
    }
    const std::size_t at = name.size() - suffix.size() - tag;
    bool tagged = name[at] == '.';
    for (std::size_t i = at + 1; i < at + tag; ++i)
      tagged = tagged && std::isalnum(static_cast<unsigned char>(name[i]));
    if (tagged) return true;
  }
  return false;
}

// `requested`: the file names the last line asked to write (a new file of that form is no temporary).
void check(const std::map<std::string, Entry>& before, const std::map<std::string, Entry>& after, bool written,
           const std::vector<std::string>& contents, const std::vector<std::string>& requested) {
  for (const auto& [name, entry] : after) {
    const std::string file = fs::path(name).filename().string();
    bool asked = false;
    for (const std::string& r : requested) asked = asked || fs::path(r).filename().string() == file;
    if (before.count(name) == 0 && !asked && temporary_name(file)) violated("a temporary was left", name);
  }
  if (!written) {
    if (after.size() != before.size()) violated("a refused write changed the folder", std::to_string(after.size()));
    for (const auto& [name, entry] : before) {
      const auto it = after.find(name);
      if (it == after.end() || it->second.type != entry.type || it->second.content != entry.content) {
        violated("a refused write changed an entry", name);
      }
    }
    return;
  }
  for (const auto& [name, entry] : before) {
    const auto it = after.find(name);
    if (it == after.end()) violated("an entry disappeared", name);
    if (it->second.type != entry.type) violated("an entry changed its type", name);
    if (entry.type != fs::file_type::regular || it->second.content == entry.content) continue;
    bool known = false;
    for (const std::string& c : contents) known = known || it->second.content == c;
    if (!known) violated("a file holds neither its old content nor a written one", name);
  }
}

}  // namespace

void run_input(std::string_view input) {
  std::string folder = (fs::temp_directory_path() / "megasim_fuzz_output_XXXXXX").string();
  if (::mkdtemp(folder.data()) == nullptr) return;
  const fs::path root(folder);
  std::vector<std::string> lines;
  std::istringstream in{std::string(input)};
  for (std::string line; std::getline(in, line) && lines.size() <= kMaxEntries;) lines.push_back(line);
  if (!lines.empty()) {
    for (std::size_t i = 0; i + 1 < lines.size(); ++i) make_entry(root, words(lines[i]));
    const auto before = snapshot(root);
    bool written = false;
    std::vector<std::string> contents;
    try {
      contents = write_outputs(root, words(lines.back()));
      written = !contents.empty();
    } catch (const sim::ConfigError&) {
      written = false;
    }
    const std::vector<std::string> last = words(lines.back());
    check(before, snapshot(root), written, contents,
          std::vector<std::string>(last.begin() + (last.empty() ? 0 : 1), last.end()));
  }
  std::error_code ec;
  fs::remove_all(root, ec);
}

}  // namespace megasim::fuzz
