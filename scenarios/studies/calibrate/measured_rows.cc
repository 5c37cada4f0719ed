#include "scenarios/studies/calibrate/measured_rows.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <set>

#include "scenarios/config/input_file.h"
#include "scenarios/config/keys.h"
#include "scenarios/config/loader.h"
#include "sim/error.h"

namespace megasim::scenarios {
namespace {

struct CsvLine {
  std::size_t line = 0;  // 1-based, where the record starts
  std::vector<std::string> fields;
};

// RFC 4180 records: fields split at commas outside quotes; a quoted field may hold commas, line
// breaks and "" for a quote. Lines whose first character is '#' and blank lines are skipped.
std::vector<CsvLine> split_records(std::string_view text, const std::string& source) {
  std::vector<CsvLine> records;
  std::size_t at = text.starts_with("\xEF\xBB\xBF") ? 3 : 0;  // a UTF-8 byte-order mark
  std::size_t line = 1;
  while (at < text.size()) {
    if (text[at] == '#' || text[at] == '\n' || text.substr(at, 2) == "\r\n") {
      const std::size_t end = text.find('\n', at);
      at = end == std::string_view::npos ? text.size() : end + 1;
      ++line;
      continue;
    }
    CsvLine record{line, {""}};
    bool quoted = false;
    for (; at < text.size(); ++at) {
      const char c = text[at];
      if (quoted) {
        if (c == '"' && at + 1 < text.size() && text[at + 1] == '"') {
          record.fields.back() += '"';
          ++at;
        } else if (c == '"') {
          quoted = false;
        } else {
          if (c == '\n') ++line;
          record.fields.back() += c;
        }
      } else if (c == '"' && record.fields.back().empty()) {
        quoted = true;
      } else if (c == ',') {
        record.fields.emplace_back();
      } else if (c == '\n') {
        break;
      } else if (c != '\r') {
        record.fields.back() += c;
      }
    }
    if (quoted) throw sim::ConfigError(fmt::format("{}:{}: a quoted field is not closed", source, record.line));
    ++at;
    ++line;
    records.push_back(std::move(record));
  }
  return records;
}

std::string trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return std::string(s);
}

enum class Column : std::uint8_t { kName, kScenario, kTarget, kKey };

struct Header {
  std::vector<Column> kinds;
  std::vector<std::string> names;
};

Header parse_header(const CsvLine& header, const std::string& source, MeasuredTable& table) {
  Header h;
  std::set<std::string> seen;
  int targets = 0;
  for (std::size_t i = 0; i < header.fields.size(); ++i) {
    const std::string name = trimmed(header.fields[i]);
    const std::string where = fmt::format("{}:{}: column {}", source, header.line, i + 1);
    if (name.empty()) throw sim::ConfigError(where, "\"\"", "a column name");
    if (!seen.insert(name).second) throw sim::ConfigError(where, "\"" + name + "\"", "each column once");
    Column kind = Column::kKey;
    if (name == "name") {
      kind = Column::kName;
    } else if (name == "scenario") {
      kind = Column::kScenario;
    } else if (name == "iteration_time_s" || name == "mfu") {
      kind = Column::kTarget;
      table.target = name == "mfu" ? MeasuredTarget::kMfu : MeasuredTarget::kIterationTime;
      ++targets;
    } else {
      const std::size_t dot = name.find('.');
      if (dot == std::string::npos || dot == 0 || dot + 1 == name.size()) {
        throw sim::ConfigError(where, "\"" + name + "\"",
                               "name, scenario, iteration_time_s, mfu or a scenario key as --set takes it "
                               "(section.key, e.g. cluster.gpus)");
      }
      try {
        find_key(std::string_view(name).substr(0, dot), std::string_view(name).substr(dot + 1));
      } catch (const sim::ConfigError& e) {
        throw sim::ConfigError(where + ": " + e.what());
      }
      table.keys.push_back(name);
    }
    h.kinds.push_back(kind);
    h.names.push_back(name);
  }
  if (targets != 1) {
    throw sim::ConfigError(fmt::format("{}:{}: the header", source, header.line),
                           targets == 0 ? "(no target column)" : "(both iteration_time_s and mfu)",
                           "exactly one target column: iteration_time_s (seconds) or mfu (a fraction in (0, 1])");
  }
  return h;
}

double target_value(const std::string& cell, MeasuredTarget target, const std::string& where) {
  const std::string valid =
      target == MeasuredTarget::kMfu ? "an MFU as a fraction in (0, 1] (not percent)" : "seconds > 0";
  char* end = nullptr;
  const double x = std::strtod(cell.c_str(), &end);
  if (cell.empty() || end != cell.c_str() + cell.size() || !std::isfinite(x)) {
    throw sim::ConfigError(where, "\"" + cell + "\"", "a number: " + valid);
  }
  const bool ok = target == MeasuredTarget::kMfu ? x > 0 && x <= 1 : x > 0 && x <= 1e9;
  if (!ok) throw sim::ConfigError(where, cell, valid);
  return x;
}

}  // namespace

std::string_view to_string(MeasuredTarget target) {
  return target == MeasuredTarget::kMfu ? "mfu" : "iteration_time_s";
}

MeasuredTable parse_measured_csv(std::string_view text, const std::string& source, const std::string& folder) {
  MeasuredTable table;
  table.source = source;
  const std::vector<CsvLine> records = split_records(text, source);
  if (records.empty()) {
    throw sim::ConfigError(source, "(no header)", "a CSV with a header row and one row per measured run");
  }
  const Header header = parse_header(records.front(), source, table);
  if (records.size() == 1) {
    throw sim::ConfigError(source, "(no rows)", "one row per measured run after the header");
  }
  if (records.size() - 1 > kMaxMeasuredRows) {
    throw sim::ConfigError(source, fmt::format("({} rows)", records.size() - 1),
                           fmt::format("at most {} rows", kMaxMeasuredRows));
  }
  for (std::size_t r = 1; r < records.size(); ++r) {
    const CsvLine& record = records[r];
    if (record.fields.size() != header.names.size()) {
      throw sim::ConfigError(fmt::format("{}:{}", source, record.line),
                             fmt::format("({} fields)", record.fields.size()),
                             fmt::format("{} fields, one per header column", header.names.size()));
    }
    MeasuredRow row;
    row.line = record.line;
    row.name = fmt::format("row {}", r);
    for (std::size_t i = 0; i < record.fields.size(); ++i) {
      const std::string cell = trimmed(record.fields[i]);
      const std::string where = fmt::format("{}:{}: {}", source, record.line, header.names[i]);
      switch (header.kinds[i]) {
        case Column::kName:
          if (!cell.empty()) row.name = cell;
          break;
        case Column::kScenario:
          if (!cell.empty()) {
            const std::filesystem::path p(cell);
            row.scenario_file = folder.empty() || p.is_absolute()
                                    ? cell
                                    : (std::filesystem::path(folder) / p).lexically_normal().string();
          }
          break;
        case Column::kTarget:
          row.measured = target_value(cell, table.target, where);
          break;
        case Column::kKey:
          if (!cell.empty()) row.overrides.push_back(header.names[i] + "=" + cell);
          break;
      }
    }
    table.rows.push_back(std::move(row));
  }
  return table;
}

MeasuredTable read_measured_csv(const std::string& path, const std::string& option) {
  const std::string text = read_input_file(path, option, "a readable CSV file of measured runs", kMaxMeasuredCsvBytes);
  return parse_measured_csv(text, path, std::filesystem::path(path).parent_path().string());
}

Scenario row_scenario(const MeasuredTable& table, const MeasuredRow& row, const Scenario& base) {
  try {
    Scenario s = row.scenario_file.empty() ? base : load_scenario_file(row.scenario_file);
    apply_overrides(s, row.overrides);
    validate(s);
    return s;
  } catch (const sim::ConfigError& e) {
    throw sim::ConfigError(fmt::format("{}:{} ({}): {}", table.source, row.line, row.name, e.what()));
  }
}

}  // namespace megasim::scenarios
