#include "common/time_format.h"

#include <cstdio>

namespace nyala {

namespace {

int64_t FloorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
  return q;
}

}  // namespace

std::string FormatUnixtimeMicros(int64_t micros) {
  const int64_t secs = FloorDiv(micros, 1000000);
  // The remainder, in [0, 1000000); secs * 1000000 could overflow near INT64_MIN.
  const int64_t frac = (micros % 1000000 + 1000000) % 1000000;
  const int64_t days = FloorDiv(secs, 86400);
  const int64_t sod = secs - days * 86400;
  // Civil date of a day count (H. Hinnant's algorithm, exact over the int64 range).
  const int64_t z = days + 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const int64_t doe = z - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  const int d = int(doy - (153 * mp + 2) / 5 + 1);
  const int m = int(mp < 10 ? mp + 3 : mp - 9);
  const int64_t y = yoe + era * 400 + (m <= 2);
  char year[32];
  if (y >= 0 && y <= 9999) {
    snprintf(year, sizeof(year), "%04lld", static_cast<long long>(y));
  } else {
    snprintf(year, sizeof(year), "%c%04lld", y < 0 ? '-' : '+',
             static_cast<long long>(y < 0 ? -y : y));
  }
  char buf[96];
  snprintf(buf, sizeof(buf), "%s-%02d-%02dT%02d:%02d:%02d.%06lldZ", year, m, d, int(sod / 3600),
           int(sod / 60 % 60), int(sod % 60), static_cast<long long>(frac));
  return buf;
}

}  // namespace nyala
