// host-probe: how fast the host runs plain user-space code right now. A fixed piece
// of work, no I/O and no system calls: two threads (one per vCPU of the development VM)
// each follow a chain of 4 million dependent loads through a shared 8 MiB array and
// add to one shared counter every 64 loads. It prints the best of --runs runs:
//   host probe: N ms
// On the 2-vCPU development VM this is 65-80 ms most of the time and several times
// that in the periods when rpc-bench's user CPU per request doubles while the raw
// libevent echo barely moves (bench/README.md, "The host's two states");
// bench/rpc-vs-libevent-echo.sh prints it beside each pair.
#include <gflags/gflags.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <thread>
#include <vector>

DEFINE_int32(runs, 3, "Runs of the probe; the fastest is printed.");

namespace {

constexpr size_t kSlots = size_t(1) << 20;  // 8 MiB of uint64_t
constexpr int kLoads = 4000000;

double RunOnce(const std::vector<uint64_t>& next, std::atomic<uint64_t>* shared) {
  auto chase = [&](uint64_t start) {
    uint64_t x = start, sum = 0;
    for (int i = 0; i < kLoads; i++) {
      x = next[x];
      sum += x;
      if ((i & 63) == 0) shared->fetch_add(1, std::memory_order_relaxed);
    }
    return sum;
  };
  const auto t0 = std::chrono::steady_clock::now();
  uint64_t a = 0;
  std::thread other([&] { a = chase(1); });
  const uint64_t b = chase(7);
  other.join();
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  shared->fetch_add((a + b) & 1, std::memory_order_relaxed);  // keep the sums live
  return ms;
}

}  // namespace

int main(int argc, char** argv) {
  gflags::SetUsageMessage(
      "Times a fixed piece of user-space work (two threads chasing pointers through 8 MiB "
      "and sharing one counter) to show how fast the host runs plain code right now.");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  std::vector<uint64_t> next(kSlots);
  for (size_t i = 0; i < kSlots; i++) next[i] = (i * 2654435761u) % kSlots;
  std::atomic<uint64_t> shared{0};
  double best = 0;
  for (int r = 0; r < FLAGS_runs; r++) {
    const double ms = RunOnce(next, &shared);
    if (r == 0 || ms < best) best = ms;
  }
  printf("host probe: %.1f ms\n", best);
  return 0;
}
