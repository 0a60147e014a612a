// Text forms of UNIXTIME_MICROS values for people. Pure functions: any thread.
#pragma once

#include <cstdint>
#include <string>

namespace nyala {

// A UNIXTIME_MICROS value as ISO-8601 UTC with microseconds,
// "2023-11-14T22:13:21.000000Z" (proleptic Gregorian calendar; years outside
// 0000-9999 carry a sign and at least four digits, "-0001-...", "+10000-...").
// Exact for every int64.
std::string FormatUnixtimeMicros(int64_t micros);

}  // namespace nyala
