#include "common/human_readable.h"

#include <cstdio>

namespace nyala {

std::string HumanReadableBytes(int64_t b) {
  char buf[48];
  if (b < 1024) {
    snprintf(buf, sizeof(buf), "%lld B", static_cast<long long>(b));
  } else if (b < (int64_t{1} << 20)) {
    snprintf(buf, sizeof(buf), "%.1f KiB", b / 1024.0);
  } else if (b < (int64_t{1} << 30)) {
    snprintf(buf, sizeof(buf), "%.1f MiB", b / 1048576.0);
  } else {
    snprintf(buf, sizeof(buf), "%.2f GiB", b / 1073741824.0);
  }
  return buf;
}

}  // namespace nyala
