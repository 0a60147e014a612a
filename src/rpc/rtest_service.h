// CalculatorService: a test-only service for rpc tests and rpc-bench.
//   Add        two integers in, their sum out (the rpc-bench method)
//   AddInline  the same, marked cheap so it runs on the reactor thread
//   AddFast    the same, tried first on the reactor; declines there when x < 0, so
//              a service thread answers
//   Sleep      sleeps `sleep_ms` on a service thread, then answers (timeouts, full queues)
//   Echo       echoes the body's data and the request's sidecars
//   Fail       answers RespondFailure(IllegalState)
#pragma once

#include <atomic>

#include "rpc/service_if.h"

namespace nyala::rpc {

class CalculatorService : public ServiceIf {
 public:
  static constexpr const char* kName = "nyala.rpc_test.CalculatorService";
  CalculatorService();
  // Sleep calls currently inside their handler.
  static std::atomic<int> sleeping;
};

}  // namespace nyala::rpc
