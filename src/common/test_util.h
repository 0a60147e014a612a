// Helpers for Nyala's gtest tests: status assertions, polling with a deadline in
// place of sleeps, a private temporary directory per test, and a small HTTP client
// for the web UIs. Linked only into test binaries and benchmarks (library
// nyala_test_util; gtest binaries take main() from nyala_test_main).
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "common/status.h"
#include "nyala/monotime.h"

#define ASSERT_OK(expr)                                       \
  do {                                                        \
    ::nyala::Status _st = (expr);                             \
    ASSERT_TRUE(_st.ok()) << #expr << ": " << _st.ToString(); \
  } while (0)
#define EXPECT_OK(expr)                                       \
  do {                                                        \
    ::nyala::Status _st = (expr);                             \
    EXPECT_TRUE(_st.ok()) << #expr << ": " << _st.ToString(); \
  } while (0)

// Runs `body` (which uses ASSERT_*) until it passes or `timeout` elapses; on timeout
// the last failure is reported. Backs off from 1 ms to 100 ms between attempts.
#define ASSERT_EVENTUALLY(timeout, body) \
  ASSERT_NO_FATAL_FAILURE(::nyala::AssertEventually((timeout), (body)))

namespace nyala {

void AssertEventually(MonoDelta timeout, const std::function<void()>& body);

// A test fixture that gives each test a fresh directory under $TMPDIR, removed
// when the test passes (kept on failure, for post-mortem).
class NyalaTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;
  const std::string& test_dir() const { return test_dir_; }

 private:
  std::string test_dir_;
};

// Seed for randomized tests: $NYALA_TEST_SEED if set, else time-based. Logged.
uint32_t TestRandomSeed();

// GET http://127.0.0.1:`port``path` over HTTP/1.0: the whole response, status line
// and headers included; empty if the connection fails. Waits at most 5 s per read.
std::string HttpGet(int port, const std::string& path);
// The body of an HTTP response (after the blank line); all of it if there is none.
std::string HttpBody(const std::string& response);

}  // namespace nyala
