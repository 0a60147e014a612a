#include "common/striped.h"

#include <sched.h>

namespace nyala {

size_t ThisCpuStripe() {
  const int cpu = sched_getcpu();
  return cpu < 0 ? 0 : size_t(cpu) % kStripes;
}

}  // namespace nyala
