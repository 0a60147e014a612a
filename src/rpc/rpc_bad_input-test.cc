// Bad input against a real server messenger: a raw-socket client (plain blocking
// POSIX sockets with receive timeouts, so nothing can hang) sends what a broken or
// hostile peer might, and each test checks the error code of docs/wire-format.md, the
// closing of the connection for fatal errors, the WARNING line the server logs, and
// that a well-behaved client on another connection keeps getting correct answers.
// Also a plain (non-libFuzzer) fuzz of ParseFrameForFuzz that runs in the default suite.
#include <glog/logging.h>
#include <gtest/gtest.h>

#include <errno.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/coding.h"
#include "common/mutex.h"
#include "common/status.h"
#include "common/test_util.h"
#include "rpc/messenger.h"
#include "rpc/proxy.h"
#include "rpc/rpc_controller.h"
#include "rpc/rpc_header.pb.h"
#include "rpc/rtest.proxy.h"
#include "rpc/rtest_service.h"
#include "rpc/serialization.h"

namespace nyala::rpc {
namespace {

using rpc_test::AddRequestPB;
using rpc_test::AddResponsePB;
using rpc_test::CalculatorServiceIf;
using rpc_test::CalculatorServiceProxy;
using rpc_test::EchoRequestPB;

constexpr uint32_t kServerMaxMessageSize = 64 * 1024;
// How long a raw read waits before the test calls the server stuck.
constexpr int kRecvTimeoutSeconds = 10;

std::string Preamble() { return std::string(kPreamble, kPreambleLen); }

// u32be(len) varint(hlen) header varint(blen) body, from raw header and body bytes.
std::string RawFrame(std::string_view header, std::string_view body) {
  std::string payload;
  PutLengthPrefixed(&payload, Slice(header));
  PutLengthPrefixed(&payload, Slice(body));
  std::string frame;
  PutFixed32BE(&frame, uint32_t(payload.size()));
  return frame + payload;
}

std::string RequestFrame(int32_t call_id, const std::string& service, const std::string& method,
                         const google::protobuf::MessageLite& body) {
  RequestHeaderPB header;
  header.set_call_id(call_id);
  header.set_service_name(service);
  header.set_method_name(method);
  header.set_timeout_ms(10000);
  OutboundFrame frame;
  CHECK_OK(SerializeFrame(header, body, {}, UINT32_MAX, &frame));
  return frame.head;
}

AddRequestPB MakeAdd(int32_t x, int32_t y) {
  AddRequestPB req;
  req.set_x(x);
  req.set_y(y);
  return req;
}

std::string AddFrame(int32_t call_id, int32_t x, int32_t y) {
  return RequestFrame(call_id, CalculatorServiceIf::kServiceName,
                      CalculatorServiceIf::kAddMethodName, MakeAdd(x, y));
}

// A blocking TCP client with a receive timeout. Owns its socket.
class RawConn {
 public:
  RawConn() = default;
  RawConn(const RawConn&) = delete;
  RawConn& operator=(const RawConn&) = delete;
  ~RawConn() { Close(); }

  Status Connect(const Sockaddr& addr) {
    fd_ = socket(addr.family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) return Status::NetworkError("socket", strerror(errno), errno);
    timeval tv{kRecvTimeoutSeconds, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    if (connect(fd_, addr.addr(), addr.addrlen()) != 0) {
      return Status::NetworkError("connect " + addr.ToString(), strerror(errno), errno);
    }
    sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&ss), &len);
    local_ = Sockaddr(reinterpret_cast<sockaddr*>(&ss), len).ToString();
    return Status::OK();
  }

  // MSG_NOSIGNAL: the server may close first, and this process is the server too.
  Status Send(std::string_view data) {
    size_t off = 0;
    while (off < data.size()) {
      ssize_t n = send(fd_, data.data() + off, data.size() - off, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return Status::NetworkError("send", strerror(errno), errno);
      off += size_t(n);
    }
    return Status::OK();
  }

  Status ReadExactly(size_t n, std::string* out) {
    out->resize(n);
    size_t got = 0;
    while (got < n) {
      ssize_t r = read(fd_, out->data() + got, n - got);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        return Status::TimedOut("no data from the server within the receive timeout");
      }
      if (r < 0) return Status::NetworkError("read", strerror(errno), errno);
      if (r == 0) return Status::EndOfFile("server closed the connection");
      got += size_t(r);
    }
    return Status::OK();
  }

  // Reads one response frame.
  Status ReadResponse(ResponseHeaderPB* header, std::string* body) {
    std::string prefix;
    RETURN_NOT_OK(ReadExactly(kFrameLengthBytes, &prefix));
    size_t frame_len;
    RETURN_NOT_OK(PeekFrameLength(Slice(prefix), UINT32_MAX, &frame_len));
    std::string payload;
    RETURN_NOT_OK(ReadExactly(frame_len - kFrameLengthBytes, &payload));
    FrameParts parts;
    RETURN_NOT_OK(SplitFrame(Slice(payload), &parts));
    if (!header->ParseFromArray(parts.header.data(), int(parts.header.size()))) {
      return Status::Corruption("unparseable ResponseHeaderPB");
    }
    *body = parts.body.ToString();
    return Status::OK();
  }

  // OK when the server has closed its side (read returns 0) with nothing left unread.
  // `allow_reset` also accepts ECONNRESET, and skips any bytes still in flight.
  Status ExpectClosed(bool allow_reset = false) {
    char buf[4096];
    for (int i = 0; i < 1024; i++) {
      ssize_t r = read(fd_, buf, sizeof(buf));
      if (r == 0) return Status::OK();
      if (r > 0) {
        if (!allow_reset) {
          return Status::Corruption(std::to_string(r) + " unexpected bytes before the close");
        }
        continue;
      }
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        return Status::TimedOut("server did not close the connection");
      }
      if (allow_reset && errno == ECONNRESET) return Status::OK();
      return Status::NetworkError("read", strerror(errno), errno);
    }
    return Status::Corruption("server keeps sending");
  }

  void ShutdownWrite() { shutdown(fd_, SHUT_WR); }
  // Makes the next close() send RST instead of FIN.
  void SetAbortiveClose() {
    linger l{1, 0};
    setsockopt(fd_, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
  }
  void Close() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }
  // This end's address: what the server calls the peer in its log lines.
  const std::string& local() const { return local_; }

 private:
  int fd_ = -1;
  std::string local_;
};

// Keeps the WARNING-and-above lines logged while it is installed.
class WarningCapture : public google::LogSink {
 public:
  using google::LogSink::send;
  void send(google::LogSeverity severity, const char* /*full_filename*/,
            const char* /*base_filename*/, int /*line*/, const google::LogMessageTime& /*time*/,
            const char* message, size_t message_len) override {
    if (severity < google::GLOG_WARNING) return;
    MutexLock l(mu_);
    lines_.emplace_back(message, message_len);
  }

  // True when one line contains every one of `parts`.
  bool Contains(std::initializer_list<std::string_view> parts) const {
    MutexLock l(mu_);
    for (const auto& line : lines_) {
      bool all = true;
      for (auto p : parts) all &= line.find(p) != std::string::npos;
      if (all) return true;
    }
    return false;
  }
  size_t CountContaining(std::string_view part) const {
    MutexLock l(mu_);
    return std::count_if(lines_.begin(), lines_.end(),
                         [&](const std::string& s) { return s.find(part) != std::string::npos; });
  }
  std::string Dump() const {
    MutexLock l(mu_);
    std::string out = "captured warnings:";
    for (const auto& line : lines_) out += "\n  " + line;
    return out;
  }

 private:
  mutable Mutex mu_;
  std::vector<std::string> lines_ GUARDED_BY(mu_);
};

class RpcBadInputTest : public NyalaTest {
 protected:
  virtual uint32_t max_message_size() const { return kServerMaxMessageSize; }

  void SetUp() override {
    NyalaTest::SetUp();
    google::AddLogSink(&warnings_);
    sink_installed_ = true;

    MessengerOptions opts;
    opts.name = "server";
    opts.num_reactors = 2;
    opts.max_message_size = max_message_size();
    auto m = Messenger::Create(opts);
    ASSERT_OK(m.status());
    server_ = *m;
    ASSERT_OK(server_->RegisterService(std::make_unique<CalculatorService>(), 4, 100));
    ASSERT_OK(server_->AddListener(Sockaddr::Loopback(0), &addr_));

    MessengerOptions copts;
    copts.name = "good-client";
    copts.num_reactors = 1;
    auto c = Messenger::Create(copts);
    ASSERT_OK(c.status());
    good_client_ = *c;
    good_proxy_ = std::make_unique<CalculatorServiceProxy>(good_client_, addr_);
    // Connected before any bad input is sent.
    ASSERT_NO_FATAL_FAILURE(AssertGoodClientWorks());
    ASSERT_EQ(server_->num_connections(), 1u);
  }

  void TearDown() override {
    if (good_client_) good_client_->Shutdown();
    if (server_) server_->Shutdown();
    if (sink_installed_) google::RemoveLogSink(&warnings_);
    NyalaTest::TearDown();
  }

  // The well-behaved client gets the right sum, still over its one connection.
  void AssertGoodClientWorks() {
    const int32_t x = int32_t(rng_() % 100000);
    const int32_t y = int32_t(rng_() % 100000);
    for (bool inline_method : {false, true}) {
      AddResponsePB resp;
      RpcController rpc;
      rpc.set_timeout(MonoDelta::FromSeconds(10));
      ASSERT_OK(inline_method ? good_proxy_->AddInline(MakeAdd(x, y), &resp, &rpc)
                              : good_proxy_->Add(MakeAdd(x, y), &resp, &rpc));
      ASSERT_EQ(resp.result(), x + y) << (inline_method ? "AddInline" : "Add");
    }
    ASSERT_EQ(good_client_->num_connections(), 1u);
  }

  // Opens a raw connection, the only one besides the good client's, and waits until the
  // server has registered it. (An earlier raw connection may still be being removed
  // even though its reader already saw the close.)
  void ConnectRaw(RawConn* conn) {
    ASSERT_NO_FATAL_FAILURE(AssertOnlyGoodConnectionLeft());
    ASSERT_OK(conn->Connect(addr_));
    ASSERT_EVENTUALLY(MonoDelta::FromSeconds(10),
                      [&] { ASSERT_EQ(server_->num_connections(), 2u); });
  }

  // Reads one error response for `call_id` with `code`; stores the error in `err`.
  static void ExpectError(RawConn* conn, int32_t call_id, ErrorStatusPB::RpcErrorCodePB code,
                          ErrorStatusPB* err = nullptr) {
    ResponseHeaderPB header;
    std::string body;
    ASSERT_OK(conn->ReadResponse(&header, &body));
    EXPECT_EQ(header.call_id(), call_id);
    ASSERT_TRUE(header.is_error());
    ErrorStatusPB e;
    ASSERT_TRUE(e.ParseFromString(body)) << "unparseable ErrorStatusPB";
    EXPECT_EQ(e.code(), code) << ErrorStatusPB::RpcErrorCodePB_Name(e.code()) << ": "
                              << e.message();
    if (err) *err = e;
  }

  // A fatal error: the error frame (call id -1 unless given), then the server's close.
  static void ExpectFatal(RawConn* conn, ErrorStatusPB::RpcErrorCodePB code, int32_t call_id = -1) {
    ASSERT_NO_FATAL_FAILURE(ExpectError(conn, call_id, code));
    ASSERT_OK(conn->ExpectClosed());
  }

  // Reads the answer to a good Add call on `conn`.
  static void ExpectSum(RawConn* conn, int32_t call_id, int32_t sum) {
    ResponseHeaderPB header;
    std::string body;
    ASSERT_OK(conn->ReadResponse(&header, &body));
    EXPECT_EQ(header.call_id(), call_id);
    ASSERT_FALSE(header.is_error());
    AddResponsePB resp;
    ASSERT_TRUE(resp.ParseFromString(body));
    EXPECT_EQ(resp.result(), sum);
  }

  // The server drops the raw connection (its count returns to the good client's one).
  void AssertOnlyGoodConnectionLeft() {
    ASSERT_EVENTUALLY(MonoDelta::FromSeconds(10),
                      [&] { ASSERT_EQ(server_->num_connections(), 1u); });
  }

  void ExpectWarning(std::initializer_list<std::string_view> parts) {
    EXPECT_TRUE(warnings_.Contains(parts)) << warnings_.Dump();
  }

  // Sends the first `cut` bytes of `stream` on a new raw connection and half-closes
  // it: the server sees the stream end mid-frame, closes its side without an answer
  // and logs it.
  void ExpectCutOffStreamClosed(const std::string& stream, size_t cut) {
    SCOPED_TRACE(cut);
    RawConn conn;
    ASSERT_NO_FATAL_FAILURE(ConnectRaw(&conn));
    ASSERT_OK(conn.Send(std::string_view(stream).substr(0, cut)));
    conn.ShutdownWrite();
    ASSERT_OK(conn.ExpectClosed());
    ASSERT_NO_FATAL_FAILURE(AssertOnlyGoodConnectionLeft());
    ExpectWarning({conn.local(), "closed", "mid-frame"});
  }

  WarningCapture warnings_;
  bool sink_installed_ = false;
  std::shared_ptr<Messenger> server_;
  Sockaddr addr_;
  std::shared_ptr<Messenger> good_client_;
  std::unique_ptr<CalculatorServiceProxy> good_proxy_;
  std::mt19937 rng_{TestRandomSeed()};
};

TEST_F(RpcBadInputTest, WrongPreamble) {
  {
    RawConn conn;
    ASSERT_NO_FATAL_FAILURE(ConnectRaw(&conn));
    ASSERT_OK(conn.Send("GET / HTTP/1.1\r\nHost: x\r\n\r\n"));
    ASSERT_NO_FATAL_FAILURE(ExpectFatal(&conn, ErrorStatusPB::FATAL_INVALID_HEADER));
    ExpectWarning({conn.local(), "FATAL_INVALID_HEADER", "preamble"});
  }
  {
    // Right magic, cut short, then a wrong byte in the next segment.
    RawConn conn;
    ASSERT_NO_FATAL_FAILURE(ConnectRaw(&conn));
    ASSERT_OK(conn.Send("nyr"));
    ASSERT_OK(conn.Send("Xc\x01"));
    ASSERT_NO_FATAL_FAILURE(ExpectFatal(&conn, ErrorStatusPB::FATAL_INVALID_HEADER));
    ExpectWarning({conn.local(), "FATAL_INVALID_HEADER"});
  }
  {
    // The magic with another version byte.
    RawConn conn;
    ASSERT_NO_FATAL_FAILURE(ConnectRaw(&conn));
    std::string preamble = Preamble();
    preamble[kPreambleMagicLen] = char(kProtocolVersion + 1);
    ASSERT_OK(conn.Send(preamble + AddFrame(1, 1, 2)));
    ASSERT_NO_FATAL_FAILURE(ExpectFatal(&conn, ErrorStatusPB::FATAL_VERSION_MISMATCH));
    ExpectWarning({conn.local(), "FATAL_VERSION_MISMATCH", "version 2"});
  }
  ASSERT_NO_FATAL_FAILURE(AssertOnlyGoodConnectionLeft());
  ASSERT_NO_FATAL_FAILURE(AssertGoodClientWorks());
}

TEST_F(RpcBadInputTest, LengthPrefixAboveMaxMessageSizeIsRejectedBeforeTheBody) {
  // A frame of exactly the limit is served...
  {
    EchoRequestPB echo;
    std::string frame;
    for (size_t data_len = kServerMaxMessageSize; data_len > 0; data_len--) {
      echo.set_data(std::string(data_len, 'e'));
      frame = RequestFrame(1, CalculatorServiceIf::kServiceName,
                           CalculatorServiceIf::kEchoMethodName, echo);
      if (frame.size() <= kServerMaxMessageSize) break;
    }
    ASSERT_EQ(frame.size(), kServerMaxMessageSize);
    RawConn conn;
    ASSERT_NO_FATAL_FAILURE(ConnectRaw(&conn));
    ASSERT_OK(conn.Send(Preamble() + frame));
    ResponseHeaderPB header;
    std::string body;
    ASSERT_OK(conn.ReadResponse(&header, &body));
    EXPECT_EQ(header.call_id(), 1);
    EXPECT_FALSE(header.is_error()) << body;
  }
  // ...one byte more is refused on the length prefix alone: no body is ever sent, so
  // a server waiting for it would hit the receive timeout.
  for (uint32_t frame_len : {kServerMaxMessageSize + 1, uint32_t(UINT32_MAX)}) {
    SCOPED_TRACE(frame_len);
    RawConn conn;
    ASSERT_NO_FATAL_FAILURE(ConnectRaw(&conn));
    std::string prefix;
    PutFixed32BE(&prefix, frame_len - kFrameLengthBytes);
    ASSERT_OK(conn.Send(Preamble() + prefix));
    ErrorStatusPB err;
    ASSERT_NO_FATAL_FAILURE(ExpectError(&conn, -1, ErrorStatusPB::FATAL_INVALID_HEADER, &err));
    EXPECT_NE(err.message().find("rpc_max_message_size"), std::string::npos) << err.message();
    ASSERT_OK(conn.ExpectClosed());
    ExpectWarning({conn.local(), "FATAL_INVALID_HEADER", "exceeds --rpc_max_message_size"});
  }
  ASSERT_NO_FATAL_FAILURE(AssertOnlyGoodConnectionLeft());
  ASSERT_NO_FATAL_FAILURE(AssertGoodClientWorks());
}

TEST_F(RpcBadInputTest, FrameCutOffThenSocketClosed) {
  const std::string stream = Preamble() + AddFrame(1, 20, 22);
  // Cut inside the preamble, inside the length prefix, inside the header, inside the body.
  for (size_t cut :
       {size_t(3), size_t(kPreambleLen + 2), size_t(kPreambleLen + 7), stream.size() - 1}) {
    ASSERT_NO_FATAL_FAILURE(ExpectCutOffStreamClosed(stream, cut));
  }
  {
    // And with a full close (no half-close first), abortive this time.
    RawConn conn;
    ASSERT_NO_FATAL_FAILURE(ConnectRaw(&conn));
    ASSERT_OK(conn.Send(std::string_view(stream).substr(0, stream.size() - 3)));
    conn.SetAbortiveClose();
    conn.Close();
    ASSERT_NO_FATAL_FAILURE(AssertOnlyGoodConnectionLeft());
  }
  ASSERT_NO_FATAL_FAILURE(AssertGoodClientWorks());
}

// A server that takes frames of up to 4 MiB.
class RpcBigFrameTest : public RpcBadInputTest {
 protected:
  uint32_t max_message_size() const override { return 4 << 20; }
};

// A frame big enough to be read into a buffer of its own (256 KiB and up), cut off
// inside its body: the same warning and close, and the next big call on a fresh
// connection is answered whole.
TEST_F(RpcBigFrameTest, BigFrameCutOffThenSocketClosed) {
  EchoRequestPB echo;
  echo.set_data(std::string(1 << 20, 'b'));
  const std::string stream = Preamble() + RequestFrame(1, CalculatorServiceIf::kServiceName,
                                                       CalculatorServiceIf::kEchoMethodName, echo);
  for (size_t cut : {size_t(kPreambleLen + 100), stream.size() / 2, stream.size() - 1}) {
    ASSERT_NO_FATAL_FAILURE(ExpectCutOffStreamClosed(stream, cut));
  }
  RawConn conn;
  ASSERT_NO_FATAL_FAILURE(ConnectRaw(&conn));
  // Two big calls back to back in one write, then a small one.
  const std::string second = RequestFrame(2, CalculatorServiceIf::kServiceName,
                                          CalculatorServiceIf::kEchoMethodName, echo);
  ASSERT_OK(conn.Send(stream + second + AddFrame(3, 40, 2)));
  // Service threads may answer the three calls in any order.
  std::set<int> answered;
  for (int i = 0; i < 3; i++) {
    ResponseHeaderPB header;
    std::string body;
    ASSERT_OK(conn.ReadResponse(&header, &body));
    ASSERT_FALSE(header.is_error()) << body.substr(0, 200);
    const int call_id = header.call_id();
    EXPECT_TRUE(answered.insert(call_id).second) << "call " << call_id << " answered twice";
    if (call_id == 3) {
      rpc_test::AddResponsePB resp;
      ASSERT_TRUE(resp.ParseFromString(body));
      EXPECT_EQ(resp.result(), 42);
    } else {
      rpc_test::EchoResponsePB resp;
      ASSERT_TRUE(resp.ParseFromString(body));
      EXPECT_TRUE(resp.data() == echo.data()) << "call " << call_id << ": " << resp.data().size()
                                              << " bytes echoed of " << echo.data().size();
    }
  }
  EXPECT_EQ(answered, (std::set<int>{1, 2, 3}));
  ASSERT_NO_FATAL_FAILURE(AssertGoodClientWorks());
}

TEST_F(RpcBadInputTest, GarbageHeaderBytes) {
  // Field 1 with wire type 7, which does not exist: no protobuf parser accepts it.
  const std::string garbage = "\x0f\xff\xfe\xfd garbage";
  ASSERT_FALSE(RequestHeaderPB().ParsePartialFromString(garbage));
  {
    RawConn conn;
    ASSERT_NO_FATAL_FAILURE(ConnectRaw(&conn));
    ASSERT_OK(conn.Send(Preamble() + RawFrame(garbage, MakeAdd(1, 2).SerializeAsString())));
    ASSERT_NO_FATAL_FAILURE(ExpectFatal(&conn, ErrorStatusPB::FATAL_DESERIALIZING_REQUEST));
    ExpectWarning({conn.local(), "FATAL_DESERIALIZING_REQUEST", "header"});
  }
  {
    // A header length running past the frame.
    RawConn conn;
    ASSERT_NO_FATAL_FAILURE(ConnectRaw(&conn));
    std::string frame;
    PutFixed32BE(&frame, 3);
    frame += "\x7f\x01\x02";
    ASSERT_OK(conn.Send(Preamble() + frame));
    ASSERT_NO_FATAL_FAILURE(ExpectFatal(&conn, ErrorStatusPB::FATAL_DESERIALIZING_REQUEST));
    ExpectWarning({conn.local(), "FATAL_DESERIALIZING_REQUEST", "header length"});
  }
  {
    // A header that parses but lacks its required fields.
    RequestHeaderPB partial;
    partial.set_call_id(5);
    RawConn conn;
    ASSERT_NO_FATAL_FAILURE(ConnectRaw(&conn));
    ASSERT_OK(conn.Send(Preamble() + RawFrame(partial.SerializePartialAsString(), "")));
    ASSERT_NO_FATAL_FAILURE(ExpectFatal(&conn, ErrorStatusPB::FATAL_INVALID_HEADER, 5));
    ExpectWarning({conn.local(), "FATAL_INVALID_HEADER", "required"});
  }
  ASSERT_NO_FATAL_FAILURE(AssertOnlyGoodConnectionLeft());
  ASSERT_NO_FATAL_FAILURE(AssertGoodClientWorks());
}

TEST_F(RpcBadInputTest, UnknownServiceKeepsConnection) {
  RawConn conn;
  ASSERT_NO_FATAL_FAILURE(ConnectRaw(&conn));
  ASSERT_OK(
      conn.Send(Preamble() + RequestFrame(7, "nyala.NoSuchService",
                                          CalculatorServiceIf::kAddMethodName, MakeAdd(1, 2))));
  ErrorStatusPB err;
  ASSERT_NO_FATAL_FAILURE(ExpectError(&conn, 7, ErrorStatusPB::ERROR_NO_SUCH_SERVICE, &err));
  EXPECT_NE(err.message().find("nyala.NoSuchService"), std::string::npos) << err.message();
  ExpectWarning({conn.local(), "unknown service", "nyala.NoSuchService"});
  // Non-fatal: the same connection serves the next call.
  ASSERT_OK(conn.Send(AddFrame(8, 40, 2)));
  ASSERT_NO_FATAL_FAILURE(ExpectSum(&conn, 8, 42));
  ASSERT_NO_FATAL_FAILURE(AssertGoodClientWorks());
}

TEST_F(RpcBadInputTest, UnknownMethodKeepsConnection) {
  RawConn conn;
  ASSERT_NO_FATAL_FAILURE(ConnectRaw(&conn));
  ASSERT_OK(conn.Send(
      Preamble() + RequestFrame(7, CalculatorServiceIf::kServiceName, "Multiply", MakeAdd(1, 2))));
  ErrorStatusPB err;
  ASSERT_NO_FATAL_FAILURE(ExpectError(&conn, 7, ErrorStatusPB::ERROR_NO_SUCH_METHOD, &err));
  EXPECT_NE(err.message().find("Multiply"), std::string::npos) << err.message();
  ExpectWarning({conn.local(), "unknown method", "Multiply"});
  ASSERT_OK(conn.Send(AddFrame(8, 40, 2)));
  ASSERT_NO_FATAL_FAILURE(ExpectSum(&conn, 8, 42));
  ASSERT_NO_FATAL_FAILURE(AssertGoodClientWorks());
}

TEST_F(RpcBadInputTest, UnparseableBodyIsInvalidRequestAndKeepsConnection) {
  const std::string garbage = "\x0f\xff\xfe\xfd not an AddRequestPB";
  ASSERT_FALSE(AddRequestPB().ParsePartialFromString(garbage));
  AddRequestPB missing_y;
  missing_y.set_x(1);
  RequestHeaderPB header;
  header.set_service_name(CalculatorServiceIf::kServiceName);
  RawConn conn;
  ASSERT_NO_FATAL_FAILURE(ConnectRaw(&conn));
  ASSERT_OK(conn.Send(Preamble()));
  int32_t call_id = 100;
  // Both a service-thread method and a reactor-run one; garbage and a missing field.
  for (const char* method :
       {CalculatorServiceIf::kAddMethodName, CalculatorServiceIf::kAddInlineMethodName}) {
    for (const std::string& body : {garbage, missing_y.SerializePartialAsString()}) {
      SCOPED_TRACE(std::string(method) + " body of " + std::to_string(body.size()) + " bytes");
      header.set_call_id(call_id);
      header.set_method_name(method);
      ASSERT_OK(conn.Send(RawFrame(header.SerializeAsString(), body)));
      ErrorStatusPB err;
      ASSERT_NO_FATAL_FAILURE(
          ExpectError(&conn, call_id, ErrorStatusPB::ERROR_INVALID_REQUEST, &err));
      EXPECT_NE(err.message().find("AddRequestPB"), std::string::npos) << err.message();
      // The same connection still answers a good call correctly.
      ASSERT_OK(conn.Send(AddFrame(call_id + 1, call_id, 7)));
      ASSERT_NO_FATAL_FAILURE(ExpectSum(&conn, call_id + 1, call_id + 7));
      call_id += 2;
    }
  }
  ExpectWarning({conn.local(), "invalid request", "AddRequestPB"});
  ASSERT_EQ(server_->num_connections(), 2u);
  ASSERT_NO_FATAL_FAILURE(AssertGoodClientWorks());
}

TEST_F(RpcBadInputTest, ThousandConnectionsOpenedAndDroppedAtOnce) {
  constexpr int kConns = 1000;
  // Both ends of every connection live in this process.
  rlimit rl;
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &rl), 0);
  const rlim_t want = 2 * kConns + 512;
  if (rl.rlim_cur < want) {
    ASSERT_GE(rl.rlim_max, want) << "RLIMIT_NOFILE hard limit too low for this test";
    rl.rlim_cur = want;
    ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &rl), 0) << strerror(errno);
  }
  std::vector<std::unique_ptr<RawConn>> conns;
  conns.reserve(kConns);
  const std::string full_call = AddFrame(1, 1, 1);
  // Varied: silent, preamble only, a cut-off frame, pipelined calls whose answers are
  // never read. (AddInline runs on the reactor: 12,500 queued Add calls would rightly
  // make the good client's calls SERVER_TOO_BUSY, which is load, not bad input.)
  std::string pipelined = Preamble();
  for (int i = 0; i < 50; i++) {
    pipelined += RequestFrame(i, CalculatorServiceIf::kServiceName,
                              CalculatorServiceIf::kAddInlineMethodName, MakeAdd(i, i));
  }
  for (int i = 0; i < kConns; i++) {
    auto c = std::make_unique<RawConn>();
    Status s = c->Connect(addr_);
    ASSERT_TRUE(s.ok()) << "connection " << i << ": " << s.ToString();
    switch (i % 4) {
      case 0:
        break;
      case 1:
        ASSERT_OK(c->Send(Preamble()));
        break;
      case 2:
        ASSERT_OK(c->Send(Preamble() + full_call.substr(0, full_call.size() / 2)));
        break;
      case 3:
        ASSERT_OK(c->Send(pipelined));
        break;
    }
    if (i % 2) c->SetAbortiveClose();
    conns.push_back(std::move(c));
  }
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(30),
                    [&] { ASSERT_EQ(server_->num_connections(), size_t(kConns) + 1); });
  ASSERT_NO_FATAL_FAILURE(AssertGoodClientWorks());
  conns.clear();  // all dropped at once
  ASSERT_NO_FATAL_FAILURE(AssertGoodClientWorks());
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(30), [&] { ASSERT_EQ(server_->num_connections(), 1u); });
  ASSERT_NO_FATAL_FAILURE(AssertGoodClientWorks());
  // The cut-off frames were noticed (a line each); the silent drops were not worth one.
  EXPECT_EQ(warnings_.CountContaining("mid-frame"), size_t(kConns / 4)) << warnings_.Dump();
}

// Clients that send calls and hang up without reading the answers: the service threads
// then write to sockets the peer has reset. Without MSG_NOSIGNAL the second such write
// raises SIGPIPE, whose default action kills the whole server process.
TEST_F(RpcBadInputTest, PeersHangingUpBeforeTheirAnswersDoNotKillTheServer) {
  constexpr int kRounds = 20;
  constexpr int kConnsPerRound = 50;
  std::string pipelined = Preamble();
  for (int i = 0; i < 20; i++) pipelined += AddFrame(i, i, i);
  const MonoTime deadline = MonoTime::Now() + MonoDelta::FromSeconds(60);
  for (int round = 0; round < kRounds && MonoTime::Now() < deadline; round++) {
    std::vector<std::unique_ptr<RawConn>> conns;
    for (int i = 0; i < kConnsPerRound; i++) {
      auto c = std::make_unique<RawConn>();
      ASSERT_OK(c->Connect(addr_));
      ASSERT_OK(c->Send(pipelined));
      if (round % 4 == 3) c->SetAbortiveClose();
      conns.push_back(std::move(c));
    }
    conns.clear();  // FIN (or RST) while the answers are being written
  }
  ASSERT_NO_FATAL_FAILURE(AssertOnlyGoodConnectionLeft());
  // Calls of the gone peers may still be queued; the good client would rightly be told
  // SERVER_TOO_BUSY while the queue is full.
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(30), [&] {
    auto queues = server_->ServiceQueueSizes();
    ASSERT_EQ(queues.size(), 1u);
    ASSERT_EQ(queues[0].second, 0u) << queues[0].first;
  });
  ASSERT_NO_FATAL_FAILURE(AssertGoodClientWorks());
}

TEST_F(RpcBadInputTest, RandomBytesAfterPreambleNeverHurtTheServer) {
  constexpr int kInputs = 2000;
  const MonoTime deadline = MonoTime::Now() + MonoDelta::FromSeconds(120);
  const std::string valid = AddFrame(3, 4, 5);
  auto byte = [&] { return char(rng_() & 0xff); };
  int done = 0;
  for (; done < kInputs && MonoTime::Now() < deadline; done++) {
    std::string input;
    switch (rng_() % 5) {
      case 0:  // random bytes
        input.resize(rng_() % 300);
        for (char& c : input) c = byte();
        break;
      case 1:  // a valid frame with a few bytes changed
        input = valid;
        for (int i = 0, n = 1 + int(rng_() % 4); i < n; i++) input[rng_() % input.size()] = byte();
        break;
      case 2:  // a valid frame cut short
        input = valid.substr(0, rng_() % valid.size());
        break;
      case 3: {  // a small length prefix and random contents
        std::string payload(rng_() % 64, '\0');
        for (char& c : payload) c = byte();
        PutFixed32BE(&input, uint32_t(payload.size()));
        input += payload;
        break;
      }
      case 4:  // a valid frame, then junk
        input = valid;
        for (int i = 0, n = 1 + int(rng_() % 40); i < n; i++) input += byte();
        break;
    }
    RawConn conn;
    Status s = conn.Connect(addr_);
    ASSERT_TRUE(s.ok()) << "input " << done << ": " << s.ToString();
    // The server may close first (ECONNRESET, EPIPE); only its closing matters here.
    (void)conn.Send(Preamble() + input);
    conn.ShutdownWrite();
    // Whatever it made of the input, at our end of stream the server closes its side.
    s = conn.ExpectClosed(/*allow_reset=*/true);
    ASSERT_TRUE(s.ok()) << "input " << done << " (" << input.size() << " bytes): " << s.ToString();
    if (done % 250 == 0) {
      ASSERT_NO_FATAL_FAILURE(AssertGoodClientWorks());
    }
  }
  LOG(INFO) << done << " random inputs sent";
  EXPECT_GE(done, kInputs / 10) << "too few inputs within the time bound";
  ASSERT_NO_FATAL_FAILURE(AssertOnlyGoodConnectionLeft());
  ASSERT_NO_FATAL_FAILURE(AssertGoodClientWorks());
}

// ParseFrameForFuzz without libFuzzer: the valid stream, every truncation of it, and
// thousands of random and mutated inputs. Run under ASan/UBSan to catch overreads.
TEST(ParseFrameForFuzzTest, RandomAndMutatedInputs) {
  constexpr uint32_t kMax = 1 << 20;
  std::mt19937 rng(TestRandomSeed());
  // A valid stream: three frames, one with sidecars.
  std::string stream = Preamble();
  std::vector<size_t> boundaries = {stream.size()};
  for (int i = 0; i < 3; i++) {
    RequestHeaderPB header;
    header.set_call_id(i);
    header.set_service_name("svc");
    header.set_method_name("m");
    std::vector<std::string> sidecars;
    if (i == 1) sidecars = {"first", "", std::string(300, 's')};
    for (uint32_t off : SidecarOffsets(sidecars)) header.add_sidecar_offsets(off);
    OutboundFrame frame;
    ASSERT_OK(SerializeFrame(header, MakeAdd(i, i), sidecars, kMax, &frame));
    stream += frame.head;
    for (const auto& s : frame.sidecars) stream += s;
    boundaries.push_back(stream.size());
  }
  ASSERT_OK(ParseFrameForFuzz(Slice(stream), kMax));

  // Every prefix: OK at a frame boundary, Incomplete anywhere else.
  for (size_t cut = 0; cut < stream.size(); cut++) {
    Status s = ParseFrameForFuzz(Slice(stream.data(), cut), kMax);
    if (std::find(boundaries.begin(), boundaries.end(), cut) != boundaries.end()) {
      EXPECT_TRUE(s.ok()) << cut << ": " << s.ToString();
    } else {
      EXPECT_TRUE(s.IsIncomplete()) << cut << ": " << s.ToString();
    }
  }
  // A limit below the largest frame rejects it on its length prefix.
  EXPECT_TRUE(ParseFrameForFuzz(Slice(stream), 200).IsInvalidArgument());

  auto expected_outcome = [](const Status& s) {
    return s.ok() || s.IsIncomplete() || s.IsInvalidArgument() || s.IsCorruption();
  };
  // Mutations of the valid stream (each run in its own heap copy so ASan sees overreads).
  for (int i = 0; i < 4000; i++) {
    std::string m = stream;
    switch (rng() % 4) {
      case 0:
        for (int j = 0, n = 1 + int(rng() % 8); j < n; j++) m[rng() % m.size()] = char(rng());
        break;
      case 1:
        m.erase(kPreambleLen + rng() % (m.size() - kPreambleLen), 1 + rng() % 16);
        break;
      case 2:
        m.insert(rng() % m.size(), std::string(1 + rng() % 16, char(rng())));
        break;
      case 3: {  // rewrite a frame's length prefix
        size_t at = boundaries[rng() % (boundaries.size() - 1)];
        EncodeFixed32BE(reinterpret_cast<uint8_t*>(m.data() + at), uint32_t(rng()) >> (rng() % 32));
        break;
      }
    }
    auto copy = std::make_unique<char[]>(m.size());
    memcpy(copy.get(), m.data(), m.size());
    Status s = ParseFrameForFuzz(Slice(copy.get(), m.size()), kMax);
    ASSERT_TRUE(expected_outcome(s)) << s.ToString();
  }
  // Random bytes, with and without a valid preamble.
  for (int i = 0; i < 2000; i++) {
    std::string r(rng() % 512, '\0');
    for (char& c : r) c = char(rng());
    if (i % 2) r = Preamble() + r;
    auto copy = std::make_unique<char[]>(r.size());
    memcpy(copy.get(), r.data(), r.size());
    Status s = ParseFrameForFuzz(Slice(copy.get(), r.size()), kMax);
    ASSERT_TRUE(expected_outcome(s)) << s.ToString();
    if (i % 2 == 0 && r.size() >= size_t(kPreambleLen) &&
        memcmp(r.data(), kPreamble, kPreambleLen) != 0) {
      EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
    }
  }
}

TEST(SplitSidecarsTest, RejectsBadOffsets) {
  const std::string area = "abcdefgh";
  std::vector<Slice> out;
  google::protobuf::RepeatedField<uint32_t> offsets;
  EXPECT_OK(SplitSidecars(offsets, Slice(""), &out));
  EXPECT_TRUE(SplitSidecars(offsets, Slice(area), &out).IsCorruption());  // trailing bytes
  offsets.Add(0);
  offsets.Add(3);
  ASSERT_OK(SplitSidecars(offsets, Slice(area), &out));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].ToString(), "abc");
  EXPECT_EQ(out[1].ToString(), "defgh");
  offsets.Set(1, 9);  // past the end
  EXPECT_TRUE(SplitSidecars(offsets, Slice(area), &out).IsCorruption());
  offsets.Set(0, 2);  // does not start at 0
  offsets.Set(1, 3);
  EXPECT_TRUE(SplitSidecars(offsets, Slice(area), &out).IsCorruption());
  offsets.Set(0, 0);  // descending
  offsets.Set(1, 5);
  offsets.Add(4);
  EXPECT_TRUE(SplitSidecars(offsets, Slice(area), &out).IsCorruption());
}

}  // namespace
}  // namespace nyala::rpc
