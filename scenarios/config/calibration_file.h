// Calibration files: measured efficiencies that replace the public defaults of the cost model
// (DESIGN.md "Compute"). A scenario names one with `[calibration] file = "PATH"`; `megasim
// calibrate` (a real backend) writes them. Every field is optional; absent ones keep the defaults.
//
//   [compute]
//   best_gemm_efficiency = 0.80            # large-GEMM FLOP/s over peak
//   gemm_k_overhead = 153                  # per-tile fixed cost in k steps
//   memory_efficiency = 0.85               # fraction of HBM bandwidth for elementwise kernels
//   flash_attention_forward_efficiency = 0.65
//   flash_attention_backward_efficiency = 0.55
//   flash_attention_1_forward_efficiency = 0.325    # FlashAttention-1 (plan.attention_kernel)
//   flash_attention_1_backward_efficiency = 0.275
//   launch_overhead_us = 4.0
//   host_sync_gap_us = 50                  # GPU idle after a host synchronisation
//   fp8_gemm_efficiency_scale = 1          # FP8 GEMMs' efficiency over the BF16 curve's (calibrate on FP8 GPUs)
//   get_batch_host_us = 500                # host time of a synchronous get_batch
//   gemm_points = [ { m = 8192, n = 2304, k = 6144, efficiency = 0.71 } ]   # measured GEMMs
//   memory_points = [ { bytes = 1048576, efficiency = 0.9 } ]                # measured memory-bound ops
//
//   [network]
//   nvlink_efficiency = 0.77               # achieved fraction of NVLink bandwidth (busbw / line rate)
//   network_efficiency = 0.96              # achieved fraction of NIC/switch bandwidth
//
//   [collective]                           # fixed costs of collective calls (models/collective.h)
//   base_latency_us = 10
//   nvlink_step_latency_us = 1             # one algorithm step between ranks of one server
//   net_step_latency_us = 5
//   reduction_gbytes_per_s = 3             # combining received data (0: free, as with NCCL)
//
//   [device]                               # a machine gpus.csv does not list (megasim calibrate
//   name = "cpu: AMD EPYC, Eigen float32"  #   --backend cpu): used when cluster.gpu = "calibrated"
//   peak_tflops = 0.1                      # the FLOP/s efficiencies are relative to
//   memory_tbytes_per_s = 0.01             # the bandwidth memory_efficiency is relative to
//   memory_gbytes = 12                     # memory per rank
//   intra_node_gbytes_per_s = 4.5          # between two ranks of one server, each way
//   inter_node_gbytes_per_s = 1.2          # optional: between two servers, each way (the NIC rate;
//                                          #   absent when the calibration ran on one host)
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "backend/sim/fabric_params.h"
#include "models/collective.h"
#include "models/compute_cost.h"
#include "models/gpu_spec.h"

namespace megasim::scenarios {

// The [device] of a calibration file or text; nullopt when it has none. Every field is required but
// inter_node_gbytes_per_s.
struct CalibratedDevice {
  models::GpuSpec gpu;                 // nvlink_total_gbytes_per_s = 2 x intra_node_gbytes_per_s
  double inter_node_gbytes_per_s = 0;  // 0: not measured
};

// A calibration file read and parsed once: its [device] (checked when read) and the fields to apply
// over any defaults (checked when applied, against what they apply to). Copies share the parse.
class CalibrationFile {
 public:
  // Throws sim::ConfigError naming the file for an unreadable file, malformed TOML or a bad [device].
  static CalibrationFile read(const std::string& path);
  // The same from TOML text (`source` names it in messages).
  static CalibrationFile parse(std::string_view toml_text, std::string_view source);

  [[nodiscard]] const std::optional<CalibratedDevice>& device() const { return device_; }
  // Applies the file's fields over `compute`, `fabric` and, when given, `collective`. Throws
  // sim::ConfigError naming the file and the key ("calibration.compute.best_gemm_efficiency") for
  // unknown keys, wrong types, out-of-range values or a [collective] section without `collective`.
  void apply(models::ComputeCalibration& compute, backend::FabricParams& fabric,
             models::CollectiveParams* collective = nullptr) const;

 private:
  struct Parsed;
  CalibrationFile(std::string source, std::shared_ptr<const Parsed> parsed);

  std::string source_;
  std::shared_ptr<const Parsed> parsed_;
  std::optional<CalibratedDevice> device_;
};

// One-shot forms of CalibrationFile::read or parse, then apply or device().
void apply_calibration_file(const std::string& path, models::ComputeCalibration& compute, backend::FabricParams& fabric,
                            models::CollectiveParams* collective = nullptr);
void apply_calibration_text(std::string_view toml_text, std::string_view source, models::ComputeCalibration& compute,
                            backend::FabricParams& fabric, models::CollectiveParams* collective = nullptr);
std::optional<CalibratedDevice> calibrated_device(const std::string& path);
std::optional<CalibratedDevice> calibrated_device_text(std::string_view toml_text, std::string_view source);
// Their GpuSpec alone.
std::optional<models::GpuSpec> calibration_device(const std::string& path);
std::optional<models::GpuSpec> calibration_device_text(std::string_view toml_text, std::string_view source);

}  // namespace megasim::scenarios
