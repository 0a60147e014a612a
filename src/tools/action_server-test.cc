// `nyala tserver list | unregister | state` against a fake master (MasterService's
// ListTabletServers and MasterAdminService on a real loopback messenger): what each
// verb asks of the master, what it prints, and its errors for refusals and bad input.
#include <gflags/gflags.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "common/mutex.h"
#include "common/test_util.h"
#include "common/wire_protocol.h"
#include "master/master.service.h"
#include "rpc/fake_service_test_util.h"
#include "rpc/messenger.h"
#include "rpc/rpc_context.h"
#include "tools/tool_action.h"

DECLARE_string(format);
DECLARE_int64(timeout_ms);

namespace nyala::tools {
namespace {

using nlohmann::json;

// What the fake master was asked, in order: "UnregisterTServer <uuid>",
// "ENTER_MAINTENANCE_MODE <uuid>"...
struct Calls {
  Mutex mu;
  std::vector<std::string> list GUARDED_BY(mu);
  void Add(const std::string& c) {
    MutexLock l(mu);
    list.push_back(c);
  }
  std::vector<std::string> Get() {
    MutexLock l(mu);
    return list;
  }
};

void SetMasterError(master::MasterErrorPB::Code code, const Status& s, master::MasterErrorPB* e) {
  e->set_code(code);
  StatusToPB(s, e->mutable_status());
}

// Knows "live-ts" (live) and "dead-ts" (dead, in maintenance mode).
class FakeMaster : public master::MasterServiceIf {
 public:
  void ListTabletServers(const master::ListTabletServersRequestPB*,
                         master::ListTabletServersResponsePB* resp, rpc::RpcContext* ctx) override {
    auto add = [&](const std::string& uuid, bool live, master::TServerStatePB state) {
      auto* e = resp->add_servers();
      e->mutable_instance_id()->set_permanent_uuid(uuid);
      auto* hp = e->mutable_registration()->add_rpc_addresses();
      hp->set_host("127.0.0.1");
      hp->set_port(live ? 7050 : 7060);
      e->set_live(live);
      e->set_millis_since_heartbeat(live ? 5 : 90000);
      e->set_num_live_tablets(live ? 3 : 0);
      e->set_num_replicas(live ? 4 : 2);
      e->set_state(state);
    };
    add("live-ts", true, master::TSERVER_STATE_NONE);
    add("dead-ts", false, master::MAINTENANCE_MODE);
    ctx->RespondSuccess();
  }
  NYALA_FAKE_UNIMPLEMENTED(master, Ping)
  NYALA_FAKE_UNIMPLEMENTED(master, TSHeartbeat)
  NYALA_FAKE_UNIMPLEMENTED(master, CreateTable)
  NYALA_FAKE_UNIMPLEMENTED(master, IsCreateTableDone)
  NYALA_FAKE_UNIMPLEMENTED(master, DeleteTable)
  NYALA_FAKE_UNIMPLEMENTED(master, ListTables)
  NYALA_FAKE_UNIMPLEMENTED(master, GetTableSchema)
  NYALA_FAKE_UNIMPLEMENTED(master, AlterTable)
  NYALA_FAKE_UNIMPLEMENTED(master, IsAlterTableDone)
  NYALA_FAKE_UNIMPLEMENTED(master, GetTableLocations)
  NYALA_FAKE_UNIMPLEMENTED(master, GetMasterRegistration)
  NYALA_FAKE_UNIMPLEMENTED(master, ListTablets)
  NYALA_FAKE_UNIMPLEMENTED(master, GetTableStatistics)
};

class FakeAdmin : public master::MasterAdminServiceIf {
 public:
  explicit FakeAdmin(std::shared_ptr<Calls> calls) : calls_(std::move(calls)) {}

  void UnregisterTServer(const master::UnregisterTServerRequestPB* req,
                         master::UnregisterTServerResponsePB* resp, rpc::RpcContext* ctx) override {
    calls_->Add("UnregisterTServer " + req->uuid());
    if (req->uuid() == "live-ts") {
      SetMasterError(master::MasterErrorPB::TABLET_SERVER_IS_LIVE,
                     Status::IllegalState("tablet server live-ts is live (last heartbeat 5 ms "
                                          "ago): only a server the master considers dead can "
                                          "be unregistered"),
                     resp->mutable_error());
    } else if (req->uuid() != "dead-ts") {
      Unknown(req->uuid(), resp->mutable_error());
    }
    ctx->RespondSuccess();
  }
  void ChangeTServerState(const master::ChangeTServerStateRequestPB* req,
                          master::ChangeTServerStateResponsePB* resp,
                          rpc::RpcContext* ctx) override {
    calls_->Add(master::ChangeTServerStateRequestPB::Change_Name(req->change()) + " " +
                req->uuid());
    if (req->uuid() != "live-ts" && req->uuid() != "dead-ts") {
      Unknown(req->uuid(), resp->mutable_error());
    }
    ctx->RespondSuccess();
  }
  NYALA_FAKE_UNIMPLEMENTED(master, MoveReplica)
  NYALA_FAKE_UNIMPLEMENTED(master, SetReplicationFactor)
  NYALA_FAKE_UNIMPLEMENTED(master, Rebalance)

 private:
  static void Unknown(const std::string& uuid, master::MasterErrorPB* err) {
    SetMasterError(master::MasterErrorPB::UNKNOWN_TABLET_SERVER,
                   Status::NotFound("no tablet server with this uuid is registered", uuid), err);
  }
  const std::shared_ptr<Calls> calls_;
};

class TServerVerbsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    static bool registered = false;
    if (!registered) RegisterServerActions();
    registered = true;
    FLAGS_timeout_ms = 5000;
    rpc::MessengerOptions o;
    o.name = "fake-master";
    o.num_reactors = 1;
    auto m = rpc::Messenger::Create(o);
    ASSERT_OK(m.status());
    messenger_ = *m;
    ASSERT_OK(messenger_->RegisterService(std::make_unique<FakeMaster>(), 1, 10));
    ASSERT_OK(messenger_->RegisterService(std::make_unique<FakeAdmin>(calls_), 1, 10));
    rpc::Sockaddr bound;
    ASSERT_OK(messenger_->AddListener(rpc::Sockaddr::Loopback(0), &bound));
    master_ = bound.ToString();
  }
  void TearDown() override {
    if (messenger_) messenger_->Shutdown();
  }

  // Runs `nyala tserver <verb> <args...>`; what it printed goes to `out`.
  Status Run(const std::string& verb, const std::vector<std::string>& args,
             std::string* out = nullptr) {
    const Action* action = nullptr;
    for (const auto& a : AllActions()) {
      if (a.noun == "tserver" && a.verb == verb) action = &a;
    }
    if (action == nullptr) return Status::NotFound("no action tserver " + verb);
    EXPECT_GE(int(args.size()), action->min_args);
    EXPECT_LE(int(args.size()), action->max_args);
    ::testing::internal::CaptureStdout();
    Status s = action->run(args);
    const std::string printed = ::testing::internal::GetCapturedStdout();
    if (out != nullptr) *out = printed;
    return s;
  }

  gflags::FlagSaver flag_saver_;
  std::shared_ptr<Calls> calls_ = std::make_shared<Calls>();
  std::shared_ptr<rpc::Messenger> messenger_;
  std::string master_;
};

TEST_F(TServerVerbsTest, ListShowsEachServersMaintenanceState) {
  FLAGS_format = "json";
  std::string out;
  ASSERT_OK(Run("list", {master_}, &out));
  const json rows = json::parse(out);
  ASSERT_EQ(2u, rows.size()) << out;
  EXPECT_EQ("live-ts", rows[0]["uuid"]);
  EXPECT_EQ("LIVE", rows[0]["state"]);
  EXPECT_EQ("127.0.0.1:7050", rows[0]["rpc_address"]);
  EXPECT_EQ(3, rows[0]["tablets"]);
  EXPECT_EQ("NONE", rows[0]["tserver_state"]);
  EXPECT_EQ(4, rows[0]["replicas"]);
  EXPECT_EQ(2, rows[1]["replicas"]);
  EXPECT_EQ("DEAD", rows[1]["state"]);
  EXPECT_EQ("MAINTENANCE_MODE", rows[1]["tserver_state"]);
  // CSV keeps the columns scripts read first (quickstart greps ",LIVE,").
  FLAGS_format = "csv";
  ASSERT_OK(Run("list", {master_}, &out));
  EXPECT_NE(std::string::npos, out.find("live-ts,127.0.0.1:7050,LIVE,5,3,NONE")) << out;
}

TEST_F(TServerVerbsTest, UnregisterAsksForTheUuidAndSaysWhyItIsRefused) {
  FLAGS_format = "csv";
  std::string out;
  ASSERT_OK(Run("unregister", {master_, "dead-ts"}, &out));
  EXPECT_NE(std::string::npos, out.find("dead-ts,yes")) << out;
  Status s = Run("unregister", {master_, "live-ts"});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(std::string::npos,
            s.ToString().find("unregistering tablet server live-ts: TABLET_SERVER_IS_LIVE"))
      << s.ToString();
  EXPECT_NE(std::string::npos, s.ToString().find("is live (last heartbeat 5 ms ago)"));
  s = Run("unregister", {master_, "no-such-ts"});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(std::string::npos, s.ToString().find("UNKNOWN_TABLET_SERVER")) << s.ToString();
  EXPECT_NE(std::string::npos, s.ToString().find("no-such-ts"));
  EXPECT_EQ((std::vector<std::string>{"UnregisterTServer dead-ts", "UnregisterTServer live-ts",
                                      "UnregisterTServer no-such-ts"}),
            calls_->Get());
}

TEST_F(TServerVerbsTest, StateEntersAndExitsMaintenanceMode) {
  FLAGS_format = "json";
  std::string out;
  ASSERT_OK(Run("state", {"enter_maintenance", master_, "live-ts"}, &out));
  json rows = json::parse(out);
  EXPECT_EQ("MAINTENANCE_MODE", rows[0]["tserver_state"]);
  ASSERT_OK(Run("state", {"exit_maintenance", master_, "dead-ts"}, &out));
  rows = json::parse(out);
  EXPECT_EQ("dead-ts", rows[0]["uuid"]);
  EXPECT_EQ("NONE", rows[0]["tserver_state"]);
  Status s = Run("state", {"enter_maintenance", master_, "no-such-ts"});
  EXPECT_NE(std::string::npos, s.ToString().find("changing the state of tablet server no-such-ts: "
                                                 "UNKNOWN_TABLET_SERVER"))
      << s.ToString();
  EXPECT_EQ(
      (std::vector<std::string>{"ENTER_MAINTENANCE_MODE live-ts", "EXIT_MAINTENANCE_MODE dead-ts",
                                "ENTER_MAINTENANCE_MODE no-such-ts"}),
      calls_->Get());
}

TEST_F(TServerVerbsTest, AnUnknownStateChangeIsRefusedBeforeAskingTheMaster) {
  for (const char* bad : {"frobnicate", "maintenance", "ENTER_MAINTENANCE_MODE", ""}) {
    Status s = Run("state", {bad, master_, "live-ts"});
    EXPECT_TRUE(s.IsInvalidArgument()) << bad << ": " << s.ToString();
    EXPECT_EQ("unknown tablet server state change '" + std::string(bad) +
                  "': expected enter_maintenance or exit_maintenance",
              s.message());
  }
  EXPECT_TRUE(calls_->Get().empty());
  // An unknown verb of the noun is no action at all (nyala_main reports it).
  EXPECT_TRUE(Run("frobnicate", {master_}).IsNotFound());
}

}  // namespace
}  // namespace nyala::tools
