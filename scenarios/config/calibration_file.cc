#include "scenarios/config/calibration_file.h"

#include <toml++/toml.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <utility>

#include "scenarios/config/input_file.h"
#include "sim/error.h"

namespace megasim::scenarios {
namespace {

std::string key_of(std::string_view section, std::string_view name) {
  return "calibration." + std::string(section) + "." + std::string(name);
}

double number(const toml::node& node, const std::string& key) {
  if (auto v = node.as_floating_point()) return v->get();
  if (auto v = node.as_integer()) return static_cast<double>(v->get());
  throw sim::ConfigError(key, "(not a number)", "a number");
}

std::int64_t integer(const toml::node& node, const std::string& key) {
  if (auto v = node.as_integer()) return v->get();
  throw sim::ConfigError(key, "(not an integer)", "an integer");
}

models::GemmPoint gemm_point(const toml::node& node, const std::string& key) {
  const toml::table* t = node.as_table();
  if (t == nullptr) throw sim::ConfigError(key, "(not a table)", "{ m = M, n = N, k = K, efficiency = E }");
  models::GemmPoint p;
  for (const auto& [name, value] : *t) {
    const std::string field = key + "." + std::string(name.str());
    if (name == "m")
      p.m = integer(value, field);
    else if (name == "n")
      p.n = integer(value, field);
    else if (name == "k")
      p.k = integer(value, field);
    else if (name == "efficiency")
      p.efficiency = number(value, field);
    else
      throw sim::ConfigError(field, "(unknown key)", "one of m, n, k, efficiency");
  }
  return p;
}

models::MemoryPoint memory_point(const toml::node& node, const std::string& key) {
  const toml::table* t = node.as_table();
  if (t == nullptr) throw sim::ConfigError(key, "(not a table)", "{ bytes = B, efficiency = E }");
  models::MemoryPoint p;
  for (const auto& [name, value] : *t) {
    const std::string field = key + "." + std::string(name.str());
    if (name == "bytes")
      p.bytes = number(value, field);
    else if (name == "efficiency")
      p.efficiency = number(value, field);
    else
      throw sim::ConfigError(field, "(unknown key)", "one of bytes, efficiency");
  }
  return p;
}

// Microseconds as whole nanoseconds; a finite value >= 0 (checked before the conversion).
sim::SimTime microseconds(const toml::node& node, const std::string& key) {
  const double us = number(node, key);
  if (!std::isfinite(us) || us < 0 || us > 1e12) throw sim::ConfigError(key, std::to_string(us), "microseconds >= 0");
  return static_cast<sim::SimTime>(std::llround(us * 1e3));
}

void apply_compute(const toml::table& t, models::ComputeCalibration& c) {
  for (const auto& [name_key, node] : t) {
    const std::string_view name = name_key.str();
    const std::string key = key_of("compute", name);
    if (name == "best_gemm_efficiency")
      c.best_gemm_efficiency = number(node, key);
    else if (name == "gemm_k_overhead")
      c.gemm_k_overhead = number(node, key);
    else if (name == "memory_efficiency")
      c.memory_efficiency = number(node, key);
    else if (name == "flash_attention_forward_efficiency")
      c.flash_attention_forward_efficiency = number(node, key);
    else if (name == "flash_attention_backward_efficiency")
      c.flash_attention_backward_efficiency = number(node, key);
    else if (name == "flash_attention_1_forward_efficiency")
      c.flash_attention_1_forward_efficiency = number(node, key);
    else if (name == "flash_attention_1_backward_efficiency")
      c.flash_attention_1_backward_efficiency = number(node, key);
    else if (name == "comm_sm_fraction")
      c.comm_sm_fraction = number(node, key);
    else if (name == "fp8_gemm_efficiency_scale")
      c.fp8_gemm_efficiency_scale = number(node, key);
    else if (name == "launch_overhead_us")
      c.launch_overhead_ns = microseconds(node, key);
    else if (name == "host_sync_gap_us")
      c.host_sync_gap_ns = microseconds(node, key);
    else if (name == "get_batch_host_us")
      c.get_batch_host_ns = microseconds(node, key);
    else if (name == "gemm_points") {
      const toml::array* points = node.as_array();
      if (points == nullptr) throw sim::ConfigError(key, "(not an array)", "an array of { m, n, k, efficiency }");
      c.gemm_points.clear();
      for (const toml::node& p : *points) c.gemm_points.push_back(gemm_point(p, key));
    } else if (name == "memory_points") {
      const toml::array* points = node.as_array();
      if (points == nullptr) throw sim::ConfigError(key, "(not an array)", "an array of { bytes, efficiency }");
      c.memory_points.clear();
      for (const toml::node& p : *points) c.memory_points.push_back(memory_point(p, key));
    } else {
      throw sim::ConfigError(key, "(unknown key)",
                             "one of best_gemm_efficiency, gemm_k_overhead, memory_efficiency, "
                             "flash_attention_forward_efficiency, flash_attention_backward_efficiency, "
                             "flash_attention_1_forward_efficiency, flash_attention_1_backward_efficiency, "
                             "launch_overhead_us, host_sync_gap_us, get_batch_host_us, comm_sm_fraction, "
                             "fp8_gemm_efficiency_scale, gemm_points, memory_points");
    }
  }
}

void apply_network(const toml::table& t, backend::FabricParams& f) {
  for (const auto& [name_key, node] : t) {
    const std::string_view name = name_key.str();
    const std::string key = key_of("network", name);
    if (name == "nvlink_efficiency")
      f.nvlink_efficiency = number(node, key);
    else if (name == "network_efficiency")
      f.network_efficiency = number(node, key);
    else
      throw sim::ConfigError(key, "(unknown key)", "one of nvlink_efficiency, network_efficiency");
  }
}

void apply_collective(const toml::table& t, models::CollectiveParams& c) {
  for (const auto& [name_key, node] : t) {
    const std::string_view name = name_key.str();
    const std::string key = key_of("collective", name);
    if (name == "base_latency_us")
      c.base_latency_ns = microseconds(node, key);
    else if (name == "nvlink_step_latency_us")
      c.nvlink_step_latency_ns = microseconds(node, key);
    else if (name == "net_step_latency_us")
      c.net_step_latency_ns = microseconds(node, key);
    else if (name == "reduction_gbytes_per_s")
      c.reduction_gbytes_per_s = number(node, key);
    else
      throw sim::ConfigError(key, "(unknown key)",
                             "one of base_latency_us, nvlink_step_latency_us, net_step_latency_us, "
                             "reduction_gbytes_per_s");
  }
}

CalibratedDevice parse_device(const toml::table& t) {
  // Required keys first; inter_node_gbytes_per_s is optional.
  static constexpr std::array<std::string_view, 6> kNames = {"name",
                                                             "peak_tflops",
                                                             "memory_tbytes_per_s",
                                                             "memory_gbytes",
                                                             "intra_node_gbytes_per_s",
                                                             "inter_node_gbytes_per_s"};
  constexpr std::size_t kRequired = 5;
  CalibratedDevice device;
  models::GpuSpec& gpu = device.gpu;
  double intra_node = 0;
  std::array<bool, kNames.size()> seen{};
  for (const auto& [name_key, node] : t) {
    const std::string_view name = name_key.str();
    const std::string key = key_of("device", name);
    auto positive = [&](double v) {
      if (!(v > 0) || !std::isfinite(v)) throw sim::ConfigError(key, std::to_string(v), "a positive number");
      return v;
    };
    const auto index = static_cast<std::size_t>(std::find(kNames.begin(), kNames.end(), name) - kNames.begin());
    if (index == kNames.size()) {
      throw sim::ConfigError(key, "(unknown key)",
                             "one of name, peak_tflops, memory_tbytes_per_s, memory_gbytes, intra_node_gbytes_per_s, "
                             "inter_node_gbytes_per_s");
    }
    seen[index] = true;
    if (name == "name") {
      const auto text = node.value<std::string>();
      if (!text || text->empty()) throw sim::ConfigError(key, "(not a string)", "the device's name");
      gpu.name = *text;
    } else if (name == "peak_tflops") {
      gpu.peak_bf16_dense_tflops = positive(number(node, key));
    } else if (name == "memory_tbytes_per_s") {
      gpu.hbm_tbytes_per_s = positive(number(node, key));
    } else if (name == "memory_gbytes") {
      gpu.hbm_gbytes = positive(number(node, key));
    } else if (name == "intra_node_gbytes_per_s") {
      intra_node = positive(number(node, key));
    } else {
      device.inter_node_gbytes_per_s = positive(number(node, key));
    }
  }
  for (std::size_t i = 0; i < kRequired; ++i) {
    if (!seen[i]) {
      throw sim::ConfigError(key_of("device", kNames[i]), "(missing)",
                             "a value: every [device] key but inter_node_gbytes_per_s is required");
    }
  }
  gpu.nvlink_total_gbytes_per_s = 2 * intra_node;  // GpuSpec counts both directions
  gpu.best_gemm_efficiency = 0;
  return device;
}

toml::table parse_text(std::string_view toml_text, std::string_view source) {
  try {
    return toml::parse(toml_text, source);
  } catch (const toml::parse_error& e) {
    throw sim::ConfigError(std::string(source) + ":" + std::to_string(e.source().begin.line) +
                           ": malformed calibration TOML: " + std::string(e.description()));
  }
}

std::string read_text(const std::string& path) {
  return read_input_file(path, "calibration.file", "a readable calibration TOML file");
}

}  // namespace

struct CalibrationFile::Parsed {
  toml::table root;
};

CalibrationFile::CalibrationFile(std::string source, std::shared_ptr<const Parsed> parsed)
    : source_(std::move(source)), parsed_(std::move(parsed)) {}

CalibrationFile CalibrationFile::parse(std::string_view toml_text, std::string_view source) {
  CalibrationFile file(std::string(source), std::make_shared<const Parsed>(Parsed{parse_text(toml_text, source)}));
  if (const toml::node* device = file.parsed_->root.get("device")) {
    const toml::table* t = device->as_table();
    if (t == nullptr) {
      throw sim::ConfigError("calibration.device", "(in " + std::string(source) + ")", "a [device] table");
    }
    file.device_ = parse_device(*t);
  }
  return file;
}

CalibrationFile CalibrationFile::read(const std::string& path) {
  return parse(read_text(path), path);
}

void CalibrationFile::apply(models::ComputeCalibration& compute, backend::FabricParams& fabric,
                            models::CollectiveParams* collective) const {
  for (const auto& [section, node] : parsed_->root) {
    const toml::table* t = node.as_table();
    if (section == "compute" && t != nullptr) {
      apply_compute(*t, compute);
    } else if (section == "network" && t != nullptr) {
      apply_network(*t, fabric);
    } else if (section == "collective" && t != nullptr && collective != nullptr) {
      apply_collective(*t, *collective);
    } else if (section == "device" && t != nullptr) {
      continue;  // read by parse()
    } else {
      throw sim::ConfigError("calibration." + std::string(section.str()), "(in " + source_ + ")",
                             collective != nullptr ? "a [compute], [network], [collective] or [device] section"
                                                   : "a [compute], [network] or [device] section");
    }
  }
  models::validate(compute);
  backend::validate(fabric);
  if (collective != nullptr) models::validate(*collective);
}

void apply_calibration_text(std::string_view toml_text, std::string_view source, models::ComputeCalibration& compute,
                            backend::FabricParams& fabric, models::CollectiveParams* collective) {
  CalibrationFile::parse(toml_text, source).apply(compute, fabric, collective);
}

void apply_calibration_file(const std::string& path, models::ComputeCalibration& compute, backend::FabricParams& fabric,
                            models::CollectiveParams* collective) {
  CalibrationFile::read(path).apply(compute, fabric, collective);
}

std::optional<CalibratedDevice> calibrated_device_text(std::string_view toml_text, std::string_view source) {
  return CalibrationFile::parse(toml_text, source).device();
}

std::optional<CalibratedDevice> calibrated_device(const std::string& path) {
  return CalibrationFile::read(path).device();
}

std::optional<models::GpuSpec> calibration_device_text(std::string_view toml_text, std::string_view source) {
  std::optional<CalibratedDevice> device = calibrated_device_text(toml_text, source);
  return device ? std::optional<models::GpuSpec>(device->gpu) : std::nullopt;
}

std::optional<models::GpuSpec> calibration_device(const std::string& path) {
  std::optional<CalibratedDevice> device = calibrated_device(path);
  return device ? std::optional<models::GpuSpec>(device->gpu) : std::nullopt;
}

}  // namespace megasim::scenarios
