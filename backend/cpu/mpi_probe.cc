#include "backend/cpu/mpi_probe.h"

#include "backend/cpu/mpi_collectives.h"

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "backend/mpi/mpi_session.h"
#include "sim/error.h"

namespace megasim::backend::cpu {

namespace {

constexpr double kSmallestBytes = 8;
constexpr double kStep = 4;
constexpr double kBandwidthFitFromBytes = 64.0 * 1024;
// A sample of a small message repeats it until about this many bytes have moved (at most
// kMaxIterations times), so that the timer's resolution and a single scheduler hiccup do not
// dominate a microsecond-scale time.
constexpr double kBytesPerSample = 1024.0 * 1024;
constexpr int kMaxIterations = 1000;
constexpr int kTag = 0;

int world_rank() {
  int rank = 0;
  mpi::check_mpi(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank");
  return rank;
}

int world_size() {
  int size = 0;
  mpi::check_mpi(MPI_Comm_size(MPI_COMM_WORLD, &size), "MPI_Comm_size");
  return size;
}

// Whole floats, at least one; the caller's byte count rounded down to them.
int float_count(double bytes) {
  const double count = std::max(1.0, bytes / static_cast<double>(sizeof(float)));
  MEGASIM_ASSERT(count <= static_cast<double>(INT_MAX), "an MPI message is limited to INT_MAX elements");
  return static_cast<int>(count);
}

double bytes_of(int count) {
  return static_cast<double>(count) * static_cast<double>(sizeof(float));
}

// The same on every rank: depends on the size only.
int iterations_for(double bytes) {
  return static_cast<int>(std::clamp(kBytesPerSample / bytes, 1.0, static_cast<double>(kMaxIterations)));
}

double median(std::vector<double> values) {
  MEGASIM_ASSERT(!values.empty(), "the median of no samples");
  std::sort(values.begin(), values.end());
  const std::size_t middle = values.size() / 2;
  return values.size() % 2 == 1 ? values[middle] : 0.5 * (values[middle - 1] + values[middle]);
}

// 8 B, 32 B, ... by x4 up to max_bytes, and max_bytes itself when the steps miss it.
std::vector<double> probe_sizes(double max_bytes) {
  std::vector<double> sizes;
  for (double bytes = kSmallestBytes; bytes <= max_bytes; bytes *= kStep) sizes.push_back(bytes_of(float_count(bytes)));
  const double last = bytes_of(float_count(max_bytes));
  if (sizes.empty() || sizes.back() < last) sizes.push_back(last);
  return sizes;
}

// One-way seconds of `count` floats between this rank and `peer` (the leader sends first): half the
// round trip, median of `repetitions` samples after one warm-up round trip (which also sets up the
// shared-memory path).
double ping_pong_s(bool leader, int peer, int count, int repetitions) {
  std::vector<float> buffer(static_cast<std::size_t>(count), 1.0F);
  const int iterations = iterations_for(bytes_of(count));
  auto round_trips = [&](int n) {
    for (int i = 0; i < n; ++i) {
      if (leader) {
        mpi::check_mpi(MPI_Send(buffer.data(), count, MPI_FLOAT, peer, kTag, MPI_COMM_WORLD), "MPI_Send");
        mpi::check_mpi(MPI_Recv(buffer.data(), count, MPI_FLOAT, peer, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
                       "MPI_Recv");
      } else {
        mpi::check_mpi(MPI_Recv(buffer.data(), count, MPI_FLOAT, peer, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
                       "MPI_Recv");
        mpi::check_mpi(MPI_Send(buffer.data(), count, MPI_FLOAT, peer, kTag, MPI_COMM_WORLD), "MPI_Send");
      }
    }
  };
  round_trips(1);
  std::vector<double> samples;
  samples.reserve(static_cast<std::size_t>(repetitions));
  for (int r = 0; r < repetitions; ++r) {
    const double start = MPI_Wtime();
    round_trips(iterations);
    samples.push_back((MPI_Wtime() - start) / (2.0 * iterations));
  }
  return median(samples);
}

// Least-squares slope of seconds over bytes; 0 for fewer than 2 points.
double least_squares_slope(const std::vector<TransferPoint>& points) {
  if (points.size() < 2) return 0;
  double mean_bytes = 0;
  double mean_seconds = 0;
  for (const TransferPoint& point : points) {
    mean_bytes += point.bytes;
    mean_seconds += point.seconds;
  }
  mean_bytes /= static_cast<double>(points.size());
  mean_seconds /= static_cast<double>(points.size());
  double covariance = 0;
  double variance = 0;
  for (const TransferPoint& point : points) {
    covariance += (point.bytes - mean_bytes) * (point.seconds - mean_seconds);
    variance += (point.bytes - mean_bytes) * (point.bytes - mean_bytes);
  }
  return variance > 0 ? covariance / variance : 0;
}

// Bandwidth: the inverse slope over the points of kBandwidthFitFromBytes and up (the two largest
// points when fewer reach it). The intercept of that fit is noise-dominated and can be negative,
// so the latency is the smallest message's time instead.
LinkFit fit_link(std::vector<TransferPoint> points) {
  std::vector<TransferPoint> large;
  for (const TransferPoint& point : points) {
    if (point.bytes >= kBandwidthFitFromBytes) large.push_back(point);
  }
  if (large.size() < 2 && points.size() >= 2) large.assign(points.end() - 2, points.end());
  const double slope = least_squares_slope(large);
  // Noise can flatten or invert a fit over few points: the largest message's average rate then.
  const TransferPoint& largest = points.back();
  LinkFit fit;
  fit.latency_s = points.front().seconds;
  fit.bytes_per_s = slope > 0 ? 1.0 / slope : largest.bytes / largest.seconds;
  fit.points = std::move(points);
  return fit;
}

}  // namespace

LinkFit measure_point_to_point(double max_bytes, int repetitions) {
  return measure_point_to_point_between(0, 1, max_bytes, repetitions);
}

LinkFit measure_point_to_point_between(int first, int second, double max_bytes, int repetitions) {
  MEGASIM_ASSERT(repetitions >= 1, "at least one repetition");
  const int rank = world_rank();
  const int size = world_size();
  if (size < 2) {
    throw mpi::MpiError("rank " + std::to_string(rank) +
                        ": the point-to-point probe needs at least 2 processes, the job has " + std::to_string(size));
  }
  MEGASIM_ASSERT(first != second && first >= 0 && second >= 0 && first < size && second < size,
                 "two distinct ranks of the job");
  const std::vector<double> sizes = probe_sizes(max_bytes);
  // Laid out for one broadcast from `first`: latency, bandwidth, then each point's seconds.
  std::vector<double> result(2 + sizes.size(), 0.0);
  if (rank == first || rank == second) {
    const int peer = rank == first ? second : first;
    std::vector<TransferPoint> points;
    points.reserve(sizes.size());
    for (double bytes : sizes) {
      points.push_back({bytes, ping_pong_s(rank == first, peer, float_count(bytes), repetitions)});
    }
    const LinkFit fit = fit_link(std::move(points));
    result[0] = fit.latency_s;
    result[1] = fit.bytes_per_s;
    for (std::size_t i = 0; i < fit.points.size(); ++i) result[2 + i] = fit.points[i].seconds;
  }
  mpi::check_mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
  mpi::check_mpi(MPI_Bcast(result.data(), static_cast<int>(result.size()), MPI_DOUBLE, first, MPI_COMM_WORLD),
                 "MPI_Bcast");
  LinkFit fit;
  fit.latency_s = result[0];
  fit.bytes_per_s = result[1];
  fit.points.reserve(sizes.size());
  for (std::size_t i = 0; i < sizes.size(); ++i) fit.points.push_back({sizes[i], result[2 + i]});
  return fit;
}

double measure_collective_s(MPI_Comm comm, models::CollectiveOp op, double bytes, int repetitions) {
  MEGASIM_ASSERT(repetitions >= 1, "at least one repetition");
  const int iterations = iterations_for(bytes_of(float_count(bytes)));
  CollectiveBuffers buffers;
  run_collective(op, bytes, comm, buffers, "probe");
  std::vector<double> samples;
  samples.reserve(static_cast<std::size_t>(repetitions));
  for (int r = 0; r < repetitions; ++r) {
    mpi::check_mpi(MPI_Barrier(comm), "MPI_Barrier");
    const double start = MPI_Wtime();
    for (int i = 0; i < iterations; ++i) run_collective(op, bytes, comm, buffers, "probe");
    const double mine = (MPI_Wtime() - start) / iterations;
    // A collective has finished when its slowest member has; every member then holds the same samples.
    double slowest = 0;
    mpi::check_mpi(MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, comm), "MPI_Allreduce");
    samples.push_back(slowest);
  }
  return median(samples);
}

HostGroups world_host_groups() {
  const int rank = world_rank();
  MPI_Comm node = MPI_COMM_NULL;
  mpi::check_mpi(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node),
                 "MPI_Comm_split_type (hosts)");
  int host = rank;  // the world rank of the host's first member names the host
  const int rc = MPI_Bcast(&host, 1, MPI_INT, 0, node);
  MPI_Comm_free(&node);
  mpi::check_mpi(rc, "MPI_Bcast (host)");
  std::vector<int> hosts(static_cast<std::size_t>(world_size()));
  mpi::check_mpi(MPI_Allgather(&host, 1, MPI_INT, hosts.data(), 1, MPI_INT, MPI_COMM_WORLD), "MPI_Allgather (hosts)");
  std::vector<std::string> names;
  names.reserve(hosts.size());
  for (const int h : hosts) names.push_back("host of rank " + std::to_string(h));
  return group_by_host(names);
}

HostComm::HostComm(const HostGroups& groups, HostLink link) {
  const int rank = world_rank();
  mpi::check_mpi(MPI_Comm_split(MPI_COMM_WORLD, groups.color(link, rank), groups.key(link, rank), &comm_),
                 "MPI_Comm_split (" + std::string(to_string(link)) + " group)");
}

HostComm::~HostComm() {
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

}  // namespace megasim::backend::cpu
