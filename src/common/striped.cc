#include "common/striped.h"

namespace nyala {

size_t ThisThreadStripe() {
  static std::atomic<size_t> next{0};
  thread_local const size_t stripe = next.fetch_add(1, std::memory_order_relaxed) % kStripes;
  return stripe;
}

}  // namespace nyala
