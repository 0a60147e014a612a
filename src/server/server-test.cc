// Tests of the daemon scaffolding: data-dir locking and uuid, the web server and
// its default pages, served over a real loopback socket.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>

#include "common/test_util.h"
#include "rpc/messenger.h"
#include "rpc/proxy.h"
#include "rpc/rpc_controller.h"
#include "rpc/rtest.proxy.h"
#include "rpc/rtest_service.h"
#include "server/fs_manager.h"
#include "server/server_base.h"
#include "server/webserver.h"

namespace nyala::server {
namespace {

class ServerTest : public NyalaTest {
 protected:
  // A tablet-server-kind daemon on loopback, with ports picked at run time.
  ServerBaseOptions LoopbackServerOptions() {
    ServerBaseOptions opts;
    opts.kind = "tserver";
    opts.data_dirs = {test_dir() + "/ts"};
    opts.rpc_bind_addresses = "127.0.0.1:0";
    opts.webserver_port = 0;
    opts.num_reactors = 1;
    return opts;
  }
};

// A minimal HTTP/1.0 GET; returns the whole response (status line, headers, body).
std::string HttpGet(int port, const std::string& path) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(fd);
    return "";
  }
  std::string req = "GET " + path + " HTTP/1.0\r\nHost: localhost\r\n\r\n";
  if (write(fd, req.data(), req.size()) != ssize_t(req.size())) {
    close(fd);
    return "";
  }
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) out.append(buf, n);
  close(fd);
  return out;
}

TEST_F(ServerTest, FsManagerKeepsUuidAndLocksDirs) {
  const std::string dir = test_dir() + "/data";
  std::string uuid;
  {
    auto fsm = FsManager::Open({dir}, "tserver");
    ASSERT_OK(fsm.status());
    EXPECT_TRUE((*fsm)->created());
    uuid = (*fsm)->uuid();
    EXPECT_EQ(uuid.size(), 32u);
    // A second open of the same dir while the first holds it is refused.
    auto second = FsManager::Open({dir}, "tserver");
    ASSERT_FALSE(second.ok());
    EXPECT_TRUE(second.status().IsIllegalState()) << second.status().ToString();
    EXPECT_NE(second.status().message().find("already running"), std::string::npos);
  }
  auto again = FsManager::Open({dir}, "tserver");
  ASSERT_OK(again.status());
  EXPECT_FALSE((*again)->created());
  EXPECT_EQ((*again)->uuid(), uuid);
  again->reset();
  auto wrong_kind = FsManager::Open({dir}, "master");
  ASSERT_FALSE(wrong_kind.ok());
  EXPECT_NE(wrong_kind.status().message().find("belongs to a nyala-tserver"), std::string::npos);
}

TEST_F(ServerTest, FsManagerRejectsUnusableDir) {
  EXPECT_TRUE(FsManager::Open({}, "tserver").status().IsInvalidArgument());
  // A regular file where a directory should be.
  const std::string file = test_dir() + "/file";
  std::ofstream(file) << "x";
  auto r = FsManager::Open({file + "/sub"}, "tserver");
  EXPECT_FALSE(r.ok());
}

TEST_F(ServerTest, WebserverServesPagesAndEscapes) {
  Webserver ws("nyala-test");
  ws.RegisterPage("/hello", "Hello", [](const WebRequest& req, WebResponse* resp) {
    resp->body = "<p>name=" + EscapeHtml(req.GetArg("name")) + "</p>";
  });
  ws.RegisterRaw("/raw", [](const WebRequest&, WebResponse* resp) {
    resp->content_type = "text/plain";
    resp->body = "raw body";
  });
  ASSERT_OK(ws.Start("127.0.0.1", 0));
  ASSERT_GT(ws.port(), 0);
  std::string page = HttpGet(ws.port(), "/hello?name=%3Cscript%3Ealert(1)%3C/script%3E");
  EXPECT_NE(page.find("200 OK"), std::string::npos) << page;
  EXPECT_NE(page.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos) << page;
  EXPECT_EQ(page.find("<script>"), std::string::npos);
  EXPECT_NE(page.find("<a href=\"/hello\""), std::string::npos);  // navigation bar
  std::string raw = HttpGet(ws.port(), "/raw");
  EXPECT_NE(raw.find("text/plain"), std::string::npos);
  EXPECT_NE(raw.find("\r\n\r\nraw body"), std::string::npos);
  EXPECT_NE(HttpGet(ws.port(), "/nope").find("404"), std::string::npos);
  ws.Shutdown();
}

TEST_F(ServerTest, ServerBaseServesDefaultPages) {
  ServerBase server(LoopbackServerOptions());
  ASSERT_OK(server.Init());
  ASSERT_OK(server.Start());
  ASSERT_EQ(server.bound_rpc_addresses().size(), 1u);
  EXPECT_NE(server.bound_rpc_addresses()[0].port(), 0);
  const int port = server.webserver()->port();
  EXPECT_NE(HttpGet(port, "/healthz").find("\r\n\r\nOK"), std::string::npos);
  std::string home = HttpGet(port, "/");
  EXPECT_NE(home.find(server.uuid()), std::string::npos);
  EXPECT_NE(HttpGet(port, "/varz").find("rpc_max_message_size"), std::string::npos);
  std::string prom = HttpGet(port, "/metrics_prometheus");
  EXPECT_NE(prom.find("# TYPE rpc_connections gauge"), std::string::npos) << prom;
  std::string json = HttpGet(port, "/metrics?name=rpc_connections");
  EXPECT_NE(json.find("\"rpc_connections\""), std::string::npos) << json;
  EXPECT_EQ(json.find("rpc_bytes_sent_total"), std::string::npos);  // filtered out
  server.Shutdown();
}

TEST_F(ServerTest, RpczListsCallsInFlight) {
  ServerBase server(LoopbackServerOptions());
  ASSERT_OK(server.Init());
  ASSERT_OK(server.messenger()->RegisterService(std::make_unique<rpc::CalculatorService>(), 1, 10));
  ASSERT_OK(server.Start());
  rpc::MessengerOptions mopts;
  mopts.num_reactors = 1;
  auto client = rpc::Messenger::Create(mopts);
  ASSERT_OK(client.status());
  rpc_test::CalculatorServiceProxy proxy(*client, server.bound_rpc_addresses()[0]);
  rpc_test::SleepRequestPB req;
  req.set_sleep_ms(300);
  rpc_test::SleepResponsePB resp[2];
  rpc::RpcController rpc[2];
  std::atomic<int> done{0};
  for (int i = 0; i < 2; i++) proxy.SleepAsync(req, &resp[i], &rpc[i], [&] { done++; });
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(5), [&] {
    const std::string page = HttpGet(server.webserver()->port(), "/rpcz");
    ASSERT_NE(page.find("Calls in flight (2"), std::string::npos) << page;
    EXPECT_NE(page.find(std::string(rpc_test::CalculatorServiceIf::kServiceName) + "." +
                        rpc_test::CalculatorServiceIf::kSleepMethodName),
              std::string::npos);
    EXPECT_NE(page.find("<td>running</td>"), std::string::npos);
    EXPECT_NE(page.find("<td>queued</td>"), std::string::npos);
  });
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(5), [&] { ASSERT_EQ(done.load(), 2); });
  EXPECT_NE(HttpGet(server.webserver()->port(), "/rpcz").find("Calls in flight (0"),
            std::string::npos);
  (*client)->Shutdown();
  server.Shutdown();
}

}  // namespace
}  // namespace nyala::server
