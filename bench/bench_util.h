// Helpers shared by the benchmark programs.
#pragma once

#include <glog/logging.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>

#include <cstdint>
#include <cstring>

namespace nyala::bench {

// Pins the calling thread to `cpu` (-1: any CPU). Threads inherit their creator's CPU
// mask, so pinning the main thread before it creates a messenger or thread pins that
// messenger's or thread's threads too.
inline void PinCurrentThread(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (cpu < 0) {
    for (int i = 0; i < CPU_SETSIZE; i++) CPU_SET(i, &set);
  } else {
    CPU_SET(cpu, &set);
  }
  const int err = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
  if (err != 0 && cpu >= 0) LOG(FATAL) << "cannot pin to CPU " << cpu << ": " << strerror(err);
}

// CPU this process used so far (every thread), and its context switches.
struct Usage {
  double user_us, sys_us;
  int64_t ctx_switches;
};
inline Usage GetUsage() {
  rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return {ru.ru_utime.tv_sec * 1e6 + ru.ru_utime.tv_usec,
          ru.ru_stime.tv_sec * 1e6 + ru.ru_stime.tv_usec, ru.ru_nvcsw + ru.ru_nivcsw};
}
// User + system CPU of this process so far, in microseconds.
inline int64_t SelfCpuMicros() {
  const Usage u = GetUsage();
  return int64_t(u.user_us + u.sys_us);
}

}  // namespace nyala::bench
