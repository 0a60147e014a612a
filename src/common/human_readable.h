// Quantities as people read them. Pure functions: any thread.
#pragma once

#include <cstdint>
#include <string>

namespace nyala {

// A byte count with a binary unit: "512 B", "1.5 KiB", "3.2 MiB", "1.25 GiB".
std::string HumanReadableBytes(int64_t bytes);

}  // namespace nyala
