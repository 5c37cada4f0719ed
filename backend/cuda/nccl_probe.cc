#include "backend/cuda/nccl_probe.h"

#include <cuda_runtime.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <utility>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_handles.h"
#include "backend/cuda/cuda_libraries.h"
#include "backend/cuda/device_memory.h"
#include "backend/cuda/nccl_check.h"
#include "backend/cuda/nccl_collectives.h"
#include "sim/error.h"

namespace megasim::backend::cuda {
namespace {

constexpr std::size_t kNameBytes = 256;   // a host name, NUL-padded (HOST_NAME_MAX is 64 on Linux)
constexpr std::size_t kElementBytes = 2;  // bf16, as nccl_collectives.h moves them

std::string this_host() {
  std::array<char, kNameBytes> name{};
  if (gethostname(name.data(), name.size() - 1) != 0) throw CudaError("gethostname failed");
  return name.data();
}

// A communicator split from the world for one measurement, destroyed with it; null on ranks outside it.
class Split {
 public:
  Split(ncclComm_t world, std::optional<int> color, int key, const std::string& name) {
    check_nccl(nccl().comm_split(world, color ? *color : NCCL_SPLIT_NOCOLOR, key, &comm_, nullptr),
               "ncclCommSplit (" + name + ")", world);
    if (!color) comm_ = nullptr;
  }
  ~Split() {
    if (comm_ != nullptr) nccl().comm_destroy(comm_);
  }
  Split(const Split&) = delete;
  Split& operator=(const Split&) = delete;
  [[nodiscard]] ncclComm_t get() const { return comm_; }

 private:
  ncclComm_t comm_ = nullptr;
};

class Prober {
 public:
  Prober(ncclComm_t world, const NcclProbeOptions& options);

  HostGroups exchange_host_names();
  void measure_collectives(HostLink link, const HostGroups& hosts, std::vector<NcclPoint>& out);
  void measure_ping_pong(HostLink link, const HostGroups& hosts, std::vector<NcclPoint>& out);

 private:
  // Seconds of one call of `enqueue` on this rank: warm-up, a world barrier, then the timed calls.
  double time_calls(const std::function<void()>& enqueue);
  void barrier();
  // The largest of every rank's `seconds` (NCCL all-reduce, ncclMax).
  double slowest(double seconds);
  void sync(const char* what) { check(cudaStreamSynchronize(stream_.get()), what); }

  ncclComm_t world_;
  NcclProbeOptions options_;
  int rank_ = 0;
  int size_ = 1;
  Stream stream_;
  Events events_{2};
  DeviceBuffer input_;
  DeviceBuffer output_;
  DeviceBuffer scalar_{2 * sizeof(double), "NCCL probe scalar"};
};

DeviceBuffer allocate(std::size_t bytes, const char* what) {
  try {
    return DeviceBuffer(bytes, what);
  } catch (const DeviceMemoryError& e) {
    throw sim::ConfigError("--nccl-max-bytes", std::to_string(bytes),
                           std::string("a size whose buffers fit the GPU (") + e.what() + ")");
  }
}

Prober::Prober(ncclComm_t world, const NcclProbeOptions& options)
    : world_(world),
      options_(options),
      input_(allocate(static_cast<std::size_t>(options.max_bytes), "NCCL probe input")),
      output_(allocate(static_cast<std::size_t>(options.max_bytes), "NCCL probe output")) {
  check_nccl(nccl().comm_user_rank(world, &rank_), "ncclCommUserRank", world);
  check_nccl(nccl().comm_count(world, &size_), "ncclCommCount", world);
  check(cudaMemset(input_.get(), 0, input_.bytes()), "cudaMemset (NCCL probe input)");
}

HostGroups Prober::exchange_host_names() {
  const std::string mine = this_host();
  std::array<char, kNameBytes> padded{};
  mine.copy(padded.data(), kNameBytes - 1);
  DeviceBuffer send(kNameBytes, "host name");
  DeviceBuffer all(kNameBytes * static_cast<std::size_t>(size_), "host names");
  check(cudaMemcpy(send.get(), padded.data(), kNameBytes, cudaMemcpyHostToDevice), "cudaMemcpy (host name)");
  check_nccl(nccl().all_gather(send.get(), all.get(), kNameBytes, ncclChar, world_, stream_.get()),
             "ncclAllGather (host names)", world_);
  sync("cudaStreamSynchronize (host names)");
  std::vector<char> names(all.bytes());
  check(cudaMemcpy(names.data(), all.get(), names.size(), cudaMemcpyDeviceToHost), "cudaMemcpy (host names)");
  std::vector<std::string> host_of_rank;
  for (int r = 0; r < size_; ++r) {
    const char* name = names.data() + static_cast<std::size_t>(r) * kNameBytes;
    host_of_rank.emplace_back(name, strnlen(name, kNameBytes));
  }
  return group_by_host(host_of_rank);
}

void Prober::barrier() {
  auto* data = static_cast<float*>(scalar_.get());
  check_nccl(nccl().all_reduce(data, data, 1, ncclFloat32, ncclSum, world_, stream_.get()),
             "ncclAllReduce (probe barrier)", world_);
  sync("cudaStreamSynchronize (probe barrier)");
}

double Prober::slowest(double seconds) {
  auto* data = static_cast<double*>(scalar_.get());
  check(cudaMemcpyAsync(data, &seconds, sizeof seconds, cudaMemcpyHostToDevice, stream_.get()), "cudaMemcpyAsync");
  check_nccl(nccl().all_reduce(data, data, 1, ncclFloat64, ncclMax, world_, stream_.get()),
             "ncclAllReduce (slowest rank's time)", world_);
  double out = 0;
  check(cudaMemcpyAsync(&out, data, sizeof out, cudaMemcpyDeviceToHost, stream_.get()), "cudaMemcpyAsync");
  sync("cudaStreamSynchronize (slowest rank's time)");
  return out;
}

double Prober::time_calls(const std::function<void()>& enqueue) {
  for (int i = 0; i < options_.warmup; ++i) enqueue();
  barrier();
  check(cudaEventRecord(events_[0], stream_.get()), "cudaEventRecord");
  for (int i = 0; i < options_.repetitions; ++i) enqueue();
  check(cudaEventRecord(events_[1], stream_.get()), "cudaEventRecord");
  check(cudaEventSynchronize(events_[1]), "cudaEventSynchronize (NCCL probe)");
  return static_cast<double>(elapsed_ns(events_[0], events_[1])) * 1e-9 / options_.repetitions;
}

void Prober::measure_collectives(HostLink link, const HostGroups& hosts, std::vector<NcclPoint>& out) {
  const std::string name = std::string(to_string(link)) + " group";
  const Split group(world_, hosts.color(link, rank_), hosts.key(link, rank_), name);
  const int members = hosts.members(link);
  for (const models::CollectiveOp op : kProbedCollectives) {
    const std::string what = "NCCL probe, " + name + " " + std::string(models::to_string(op));
    for (const double bytes : probe_sizes(options_)) {
      const CollectiveSize size = collective_size(op, bytes, members);
      const double mine = time_calls(
          [&] { enqueue_collective(op, size, group.get(), input_.get(), output_.get(), stream_.get(), what); });
      const auto run_bytes = static_cast<double>(std::max(size.input_bytes, size.output_bytes));
      out.push_back(NcclPoint{link, op, members, run_bytes, slowest(mine)});
    }
  }
}

void Prober::measure_ping_pong(HostLink link, const HostGroups& hosts, std::vector<NcclPoint>& out) {
  const auto [first, second] = hosts.ping_pong_pair(link);
  const bool member = rank_ == first || rank_ == second;
  const std::string name = std::string(to_string(link)) + " ping-pong pair";
  const Split pair(world_, member ? std::optional<int>(0) : std::nullopt, rank_ == first ? 0 : 1, name);
  for (const double bytes : probe_sizes(options_)) {
    const std::size_t count = std::max<std::size_t>(1, static_cast<std::size_t>(bytes) / kElementBytes);
    auto send = [&] {
      check_nccl(
          nccl().send(input_.get(), count, ncclBfloat16, 1 - (rank_ == first ? 0 : 1), pair.get(), stream_.get()),
          "ncclSend (" + name + ")", pair.get());
    };
    auto receive = [&] {
      check_nccl(
          nccl().recv(output_.get(), count, ncclBfloat16, 1 - (rank_ == first ? 0 : 1), pair.get(), stream_.get()),
          "ncclRecv (" + name + ")", pair.get());
    };
    const double round_trip = time_calls([&] {
      if (rank_ == first) {
        send();
        receive();
      } else if (rank_ == second) {
        receive();
        send();
      }
    });
    out.push_back(NcclPoint{link, models::CollectiveOp::kSendRecv, 2, static_cast<double>(count * kElementBytes),
                            slowest(round_trip / 2)});
  }
}

}  // namespace

void validate(const NcclProbeOptions& o) {
  if (!(o.min_bytes > 0) || !(o.max_bytes >= o.min_bytes) || !std::isfinite(o.max_bytes)) {
    throw sim::ConfigError("--nccl-max-bytes", std::to_string(std::llround(o.max_bytes)),
                           "a size of at least " + std::to_string(std::llround(o.min_bytes)) + " bytes");
  }
  if (!(o.step > 1)) throw sim::ConfigError("nccl_probe.step", std::to_string(o.step), "a factor > 1");
  if (o.repetitions < 1) throw sim::ConfigError("--repetitions", std::to_string(o.repetitions), "at least 1");
  if (o.warmup < 0) throw sim::ConfigError("--warmup", std::to_string(o.warmup), "at least 0");
}

std::vector<double> probe_sizes(const NcclProbeOptions& o) {
  validate(o);
  std::vector<double> sizes;
  for (double bytes = o.min_bytes; bytes <= o.max_bytes * (1 + 1e-12); bytes *= o.step) sizes.push_back(bytes);
  if (sizes.back() < o.max_bytes * (1 - 1e-12)) sizes.push_back(o.max_bytes);
  return sizes;
}

NcclProbeResult measure_nccl_links(ncclComm_t world, const NcclProbeOptions& options) {
  validate(options);
  Prober prober(world, options);
  NcclProbeResult result;
  result.hosts = prober.exchange_host_names();
  for (const HostLink link : {HostLink::kIntraNode, HostLink::kInterNode}) {
    if (!result.hosts.measurable(link)) continue;
    prober.measure_collectives(link, result.hosts, result.points);
    prober.measure_ping_pong(link, result.hosts, result.points);
  }
  return result;
}

}  // namespace megasim::backend::cuda
