#include "common/test_util.h"

#include <arpa/inet.h>
#include <gflags/gflags.h>
#include <glog/logging.h>
#include <gtest/gtest-spi.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

namespace nyala {

void AssertEventually(MonoDelta timeout, const std::function<void()>& body) {
  const MonoTime deadline = MonoTime::Now() + timeout;
  MonoDelta backoff = MonoDelta::FromMilliseconds(1);
  while (true) {
    {
      // Swallow failures of intermediate attempts.
      ::testing::TestPartResultArray results;
      ::testing::ScopedFakeTestPartResultReporter reporter(
          ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &results);
      body();
      bool failed = false;
      for (int i = 0; i < results.size(); i++) failed |= results.GetTestPartResult(i).failed();
      if (!failed) return;
    }
    if (MonoTime::Now() > deadline) break;
    SleepFor(backoff);
    backoff = std::min(backoff * 2, MonoDelta::FromMilliseconds(100));
  }
  body();  // last attempt, failures reported
  ASSERT_FALSE(::testing::Test::HasFailure()) << "condition not met within " << timeout.ToString();
}

void NyalaTest::SetUp() {
  const char* tmp = getenv("TMPDIR");
  std::string base = (tmp && *tmp) ? tmp : "/tmp";
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  // Parameterized test names contain '/'.
  std::string name = std::string(info->test_suite_name()) + "-" + info->name();
  for (char& c : name) {
    if (c == '/') c = '_';
  }
  std::string tmpl = base + "/nyala-" + name + "-XXXXXX";
  char* dir = mkdtemp(tmpl.data());
  ASSERT_NE(dir, nullptr) << "mkdtemp " << tmpl;
  test_dir_ = dir;
}

void NyalaTest::TearDown() {
  if (!HasFailure() && !test_dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(test_dir_, ec);
  }
}

uint32_t TestRandomSeed() {
  static const uint32_t seed = [] {
    const char* env = getenv("NYALA_TEST_SEED");
    uint32_t s =
        env ? uint32_t(strtoul(env, nullptr, 10)) : uint32_t(MonoTime::Now().ToNanoseconds());
    LOG(INFO) << "random seed " << s << " (set NYALA_TEST_SEED to repeat)";
    return s;
  }();
  return seed;
}

std::string HttpGet(int port, const std::string& path) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return "";
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(uint16_t(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  std::string out;
  const std::string req = "GET " + path + " HTTP/1.0\r\nHost: localhost\r\n\r\n";
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      write(fd, req.data(), req.size()) == ssize_t(req.size())) {
    char buf[4096];
    for (ssize_t n; (n = read(fd, buf, sizeof(buf))) > 0;) out.append(buf, size_t(n));
  }
  close(fd);
  return out;
}

std::string HttpBody(const std::string& response) {
  const size_t body = response.find("\r\n\r\n");
  return body == std::string::npos ? response : response.substr(body + 4);
}

}  // namespace nyala
