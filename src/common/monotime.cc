#include "nyala/monotime.h"

#include <sys/time.h>

#include <cerrno>

#include <cstdio>

namespace nyala {

timeval MonoDelta::ToTimeVal() const {
  timeval tv;
  int64_t ns = ns_ < 0 ? 0 : ns_;
  tv.tv_sec = ns / 1000000000;
  tv.tv_usec = (ns % 1000000000) / 1000;
  return tv;
}

std::string MonoDelta::ToString() const {
  char buf[32];
  snprintf(buf, sizeof(buf), "%.3fs", ToSeconds());
  return buf;
}

MonoDelta MonoTime::CoarseResolution() {
  static const MonoDelta res = [] {
    timespec ts{};
    clock_getres(CLOCK_MONOTONIC_COARSE, &ts);
    return MonoDelta::FromNanoseconds(int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec);
  }();
  return res;
}

int64_t GetWallTimeMicros() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
}

void SleepFor(MonoDelta d) {
  if (d.ToNanoseconds() <= 0) return;
  timespec ts{time_t(d.ToNanoseconds() / 1000000000), long(d.ToNanoseconds() % 1000000000)};
  while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {
  }
}

}  // namespace nyala
