// libFuzzer target: arbitrary bytes into the server-side frame parser. Built with
// -DNYALA_FUZZ=ON (clang). Must never crash, hang or leak, whatever the input.
#include <cstddef>
#include <cstdint>

#include "rpc/serialization.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)nyala::rpc::ParseFrameForFuzz(nyala::Slice(data, size), 1 << 20);
  return 0;
}
