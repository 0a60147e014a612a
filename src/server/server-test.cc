// Tests of the daemon scaffolding: data-dir locking and uuid, the web server and
// its default pages, served over a real loopback socket.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>

#include <gflags/gflags.h>

#include "common/flag_tags.h"
#include "common/test_util.h"
#include "rpc/messenger.h"
#include "rpc/proxy.h"
#include "rpc/rpc_controller.h"
#include "rpc/rtest.proxy.h"
#include "rpc/rtest_service.h"
#include "server/fs_manager.h"
#include "server/generic_service.proxy.h"
#include "server/server_base.h"
#include "server/webserver.h"

DEFINE_int32(server_test_runtime_knob, 1, "For tests: a flag GenericService may change (1..100)");
DEFINE_validator(server_test_runtime_knob,
                 [](const char*, int32_t v) { return v >= 1 && v <= 100; });
TAG_FLAG(server_test_runtime_knob, runtime);
DEFINE_int32(server_test_startup_knob, 1, "For tests: a flag GenericService must refuse to change");
DEFINE_int32(server_test_unsafe_knob, 0, "For tests: a flag tagged unsafe");
TAG_FLAG(server_test_unsafe_knob, unsafe);
DECLARE_bool(unlock_unsafe_flags);

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
  // Process metrics, and the home page's rate charts with their data.
  EXPECT_NE(prom.find("# TYPE process_cpu_seconds_total counter"), std::string::npos) << prom;
  EXPECT_NE(prom.find("\nprocess_open_fds "), std::string::npos) << prom;
  EXPECT_NE(home.find("id=\"rate-charts\""), std::string::npos) << home;
  EXPECT_NE(home.find("data-series=\"bytes_in\""), std::string::npos) << home;
  const std::string rates = HttpGet(port, "/rates.json");
  EXPECT_NE(rates.find("application/json"), std::string::npos) << rates;
  EXPECT_NE(rates.find("{\"name\":\"bytes_out\",\"title\":\"RPC bytes out\""), std::string::npos)
      << rates;
  ASSERT_NE(server.rates(), nullptr);
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

namespace nyala::server {
namespace {

TEST_F(ServerTest, GenericServiceSetsRuntimeFlagsOnly) {
  ServerBase server(LoopbackServerOptions());
  ASSERT_OK(server.Init());
  ASSERT_OK(server.Start());
  rpc::MessengerOptions mopts;
  mopts.num_reactors = 1;
  auto client = rpc::Messenger::Create(mopts);
  ASSERT_OK(client.status());
  GenericServiceProxy proxy(*client, server.bound_rpc_addresses()[0]);
  auto set = [&](const std::string& flag, const std::string& value) {
    SetFlagRequestPB req;
    req.set_flag(flag);
    req.set_value(value);
    SetFlagResponsePB resp;
    rpc::RpcController rpc;
    EXPECT_OK(proxy.SetFlag(req, &resp, &rpc));
    return resp;
  };

  SetFlagResponsePB r = set("server_test_runtime_knob", "7");
  EXPECT_EQ(r.result(), SetFlagResponsePB::SUCCESS) << r.msg();
  EXPECT_EQ(r.old_value(), "1");
  EXPECT_EQ(FLAGS_server_test_runtime_knob, 7);
  // The validator refuses, and the value stays.
  EXPECT_EQ(set("server_test_runtime_knob", "1000").result(), SetFlagResponsePB::BAD_VALUE);
  EXPECT_EQ(set("server_test_runtime_knob", "seven").result(), SetFlagResponsePB::BAD_VALUE);
  EXPECT_EQ(FLAGS_server_test_runtime_knob, 7);
  // Not tagged runtime: refused, unchanged.
  r = set("server_test_startup_knob", "5");
  EXPECT_EQ(r.result(), SetFlagResponsePB::NOT_RUNTIME_SETTABLE) << r.msg();
  EXPECT_EQ(FLAGS_server_test_startup_knob, 1);
  EXPECT_EQ(set("rpc_max_message_size", "2048").result(), SetFlagResponsePB::NOT_RUNTIME_SETTABLE);
  EXPECT_EQ(set("no_such_flag_anywhere", "1").result(), SetFlagResponsePB::NO_SUCH_FLAG);

  // GetFlags: the changed flag with its tags; defaults only when asked for.
  GetFlagsRequestPB greq;
  GetFlagsResponsePB gresp;
  rpc::RpcController grpc;
  ASSERT_OK(proxy.GetFlags(greq, &gresp, &grpc));
  bool found = false;
  for (const auto& f : gresp.flags()) {
    EXPECT_FALSE(f.is_default_value()) << f.name();
    if (f.name() != "server_test_runtime_knob") continue;
    found = true;
    EXPECT_EQ(f.value(), "7");
    ASSERT_EQ(f.tags_size(), 1);
    EXPECT_EQ(f.tags(0), "runtime");
  }
  EXPECT_TRUE(found);
  // A flag set to its default value (as a flagfile listing every flag does) is not
  // listed, and says it is at its default when asked for.
  ASSERT_NE("", gflags::SetCommandLineOption("server_test_startup_knob", "1"));
  gflags::CommandLineFlagInfo info;
  ASSERT_TRUE(gflags::GetCommandLineFlagInfo("server_test_startup_knob", &info));
  ASSERT_FALSE(info.is_default);  // what gflags says: set on the command line
  gresp.Clear();
  grpc.Reset();
  ASSERT_OK(proxy.GetFlags(greq, &gresp, &grpc));
  for (const auto& f : gresp.flags()) EXPECT_NE(f.name(), "server_test_startup_knob");
  greq.add_flags("server_test_startup_knob");
  gresp.Clear();
  grpc.Reset();
  ASSERT_OK(proxy.GetFlags(greq, &gresp, &grpc));
  found = false;
  for (const auto& f : gresp.flags()) {
    if (f.name() != "server_test_startup_knob") continue;
    found = true;
    EXPECT_TRUE(f.is_default_value());
  }
  EXPECT_TRUE(found);
  greq.set_all_flags(true);
  GetFlagsResponsePB all;
  grpc.Reset();
  ASSERT_OK(proxy.GetFlags(greq, &all, &grpc));
  EXPECT_GT(all.flags_size(), gresp.flags_size());
  FLAGS_server_test_runtime_knob = 1;
  server.Shutdown();
}

// An unsafe flag set away from its default stops a daemon unless --unlock_unsafe_flags
// is given; the same value as the default does not count.
TEST_F(ServerTest, UnsafeFlagsNeedUnlocking) {
  ASSERT_OK(CheckUnsafeFlags());
  EXPECT_TRUE(UnsafeFlagsSet().empty());
  ASSERT_NE("", gflags::SetCommandLineOption("server_test_unsafe_knob", "0"));
  EXPECT_OK(CheckUnsafeFlags());  // the default value, set explicitly, does not count

  ASSERT_NE("", gflags::SetCommandLineOption("server_test_unsafe_knob", "5"));
  EXPECT_EQ(UnsafeFlagsSet(), std::vector<std::string>{"--server_test_unsafe_knob=5"});
  Status s = CheckUnsafeFlags();
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(s.message().find("--server_test_unsafe_knob=5"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("--unlock_unsafe_flags"), std::string::npos) << s.ToString();
  // Flags without the tag never count.
  ASSERT_NE("", gflags::SetCommandLineOption("server_test_startup_knob", "9"));
  EXPECT_EQ(UnsafeFlagsSet().size(), 1u);

  FLAGS_unlock_unsafe_flags = true;
  EXPECT_OK(CheckUnsafeFlags());
  FLAGS_unlock_unsafe_flags = false;
  FLAGS_server_test_unsafe_knob = 0;
  FLAGS_server_test_startup_knob = 1;
  EXPECT_OK(CheckUnsafeFlags());
}

}  // namespace
}  // namespace nyala::server
