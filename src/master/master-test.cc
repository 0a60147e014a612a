// The in-process Master over real RPC and HTTP: service wiring, the serialized
// GetTableLocations path and its cache metrics, the web pages.
#include "master/master.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/test_util.h"
#include "master/catalog_manager.h"
#include "master/master-test-util.h"
#include "master/master.proxy.h"
#include "master/master_service.h"
#include "rpc/rpc_controller.h"

namespace nyala::master {

namespace {
// GET `path` from 127.0.0.1:`port` (HTTP/1.0); the whole response.
}  // namespace

class MasterTest : public NyalaTest {
 protected:
  void SetUp() override {
    NyalaTest::SetUp();
    ASSERT_NO_FATAL_FAILURE(StartMaster());
    rpc::MessengerOptions o;
    o.name = "client";
    o.num_reactors = 1;
    auto m = rpc::Messenger::Create(o);
    ASSERT_OK(m.status());
    client_ = *m;
  }
  void TearDown() override {
    if (client_) client_->Shutdown();
    master_.reset();
    NyalaTest::TearDown();
  }
  void StartMaster() {
    server::ServerBaseOptions o;
    o.kind = "master";
    o.data_dirs = {test_dir() + "/master"};
    o.rpc_bind_addresses = "127.0.0.1:0";
    o.webserver_interface = "127.0.0.1";
    o.webserver_port = 0;
    o.default_rpc_port = Master::kDefaultRpcPort;
    master_ = std::make_unique<Master>(o);
    ASSERT_OK(master_->Init());
    ASSERT_OK(master_->Start());
  }
  // Calls `method` of the master (e.g. &MasterServiceProxy::Ping) with a 10 s timeout.
  template <typename Req, typename Resp>
  Status Call(Status (MasterServiceProxy::*method)(const Req&, Resp*, rpc::RpcController*) const,
              const std::type_identity_t<Req>& req, Resp* resp) {
    MasterServiceProxy proxy(client_, master_->bound_rpc_addresses()[0]);
    rpc::RpcController rpc;
    rpc.set_timeout(MonoDelta::FromSeconds(10));
    return (proxy.*method)(req, resp, &rpc);
  }
  // Registers `ts` over RPC, as the tablet server does.
  void Register(FakeTabletServer& ts) {
    TSHeartbeatResponsePB resp;
    ASSERT_OK(Call(&MasterServiceProxy::TSHeartbeat, ts.MakeHeartbeat(true, true), &resp));
    ASSERT_FALSE(resp.has_error());
    EXPECT_EQ(master_->uuid(), resp.master_instance().permanent_uuid());
  }

  std::unique_ptr<Master> master_;
  std::shared_ptr<rpc::Messenger> client_;
};

TEST_F(MasterTest, ServiceEndToEnd) {
  PingResponsePB ping;
  ASSERT_OK(Call(&MasterServiceProxy::Ping, PingRequestPB(), &ping));
  FakeTabletServer ts;
  ASSERT_OK(ts.Start());
  ASSERT_NO_FATAL_FAILURE(Register(ts));

  GetMasterRegistrationResponsePB reg;
  ASSERT_OK(
      Call(&MasterServiceProxy::GetMasterRegistration, GetMasterRegistrationRequestPB(), &reg));
  EXPECT_EQ(master_->uuid(), reg.instance_id().permanent_uuid());
  EXPECT_EQ(master_->bound_rpc_addresses()[0].port(), reg.rpc_addresses(0).port());
  EXPECT_EQ(1, reg.num_live_tablet_servers());

  CreateTableResponsePB created;
  // One server: a table of one replica (the default, 3, would be refused).
  ASSERT_OK(
      Call(&MasterServiceProxy::CreateTable, MakeCreateTableRequest("t", 3, false), &created));
  ASSERT_FALSE(created.has_error()) << created.error().ShortDebugString();
  IsCreateTableDoneRequestPB done_req;
  done_req.mutable_table()->set_table_name("t");
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(20), [&] {
    // The tablets run once their leader (here the only replica) reports.
    TSHeartbeatResponsePB beat;
    ASSERT_OK(Call(&MasterServiceProxy::TSHeartbeat, ts.MakeHeartbeat(false, false), &beat));
    ASSERT_FALSE(beat.has_error());
    ASSERT_EQ(1, beat.tablet_servers_size());
    EXPECT_EQ(ts.uuid(), beat.tablet_servers(0).permanent_uuid());
    IsCreateTableDoneResponsePB done;
    ASSERT_OK(Call(&MasterServiceProxy::IsCreateTableDone, done_req, &done));
    ASSERT_TRUE(done.done());
  });

  // Locations through the serialized-response path; the second is a cache hit.
  GetTableLocationsRequestPB req;
  req.mutable_table()->set_table_name("t");
  req.set_max_returned_locations(1000);
  req.set_intern_ts_infos_in_response(true);
  TableLocationsCache* cache = master_->catalog_manager()->locations_cache();
  ASSERT_NE(nullptr, cache);  // on by default
  const int64_t hits = cache->hits();
  GetTableLocationsResponsePB a, b;
  ASSERT_OK(Call(&MasterServiceProxy::GetTableLocations, req, &a));
  ASSERT_OK(Call(&MasterServiceProxy::GetTableLocations, req, &b));
  ASSERT_FALSE(a.has_error()) << a.error().ShortDebugString();
  EXPECT_EQ(3, a.tablet_locations_size());
  ASSERT_EQ(1, a.ts_infos_size());
  EXPECT_EQ(ts.uuid(), a.ts_infos(0).permanent_uuid());
  EXPECT_EQ(a.SerializeAsString(), b.SerializeAsString());
  EXPECT_EQ(hits + 1, cache->hits());

  // Errors travel in the response too.
  req.mutable_table()->set_table_name("nope");
  ASSERT_OK(Call(&MasterServiceProxy::GetTableLocations, req, &a));
  EXPECT_EQ(MasterErrorPB::TABLE_NOT_FOUND, a.error().code());

  ListTabletServersResponsePB servers;
  ASSERT_OK(Call(&MasterServiceProxy::ListTabletServers, ListTabletServersRequestPB(), &servers));
  ASSERT_EQ(1, servers.servers_size());
  EXPECT_TRUE(servers.servers(0).live());
  // Reported (incrementally) while the table was being created.
  EXPECT_EQ(3, servers.servers(0).num_live_tablets());
  EXPECT_EQ(LEADER, b.tablet_locations(0).interned_replicas(0).role());
}

TEST_F(MasterTest, WebPagesEscapeNames) {
  FakeTabletServer ts;
  ASSERT_OK(ts.Start());
  ASSERT_NO_FATAL_FAILURE(Register(ts));
  auto req = MakeCreateTableRequest("<script>alert(1)</script>", 0, false);
  req.mutable_schema()->mutable_columns(1)->set_name("<b>col</b>");
  CreateTableResponsePB created;
  ASSERT_OK(Call(&MasterServiceProxy::CreateTable, req, &created));
  ASSERT_FALSE(created.has_error()) << created.error().ShortDebugString();
  const int port = master_->webserver()->port();
  const std::string tables = HttpGet(port, "/tables");
  EXPECT_NE(std::string::npos, tables.find("&lt;script&gt;alert(1)&lt;/script&gt;")) << tables;
  EXPECT_EQ(std::string::npos, tables.find("<script>alert")) << tables;
  EXPECT_NE(std::string::npos, tables.find("&lt;b&gt;col&lt;/b&gt;"));
  EXPECT_NE(std::string::npos, tables.find(created.table_id()));
  const std::string servers = HttpGet(port, "/tablet-servers");
  EXPECT_NE(std::string::npos, servers.find(ts.uuid())) << servers;
  EXPECT_NE(std::string::npos, servers.find("live"));
  const std::string latency = HttpGet(port, "/rpc-latency?method=CreateTable");
  EXPECT_NE(std::string::npos, latency.find("Count: 1")) << latency;
  EXPECT_NE(std::string::npos, latency.find("99.99%"));
  // Tablets show their leader once it reports.
  EXPECT_NE(std::string::npos, tables.find("none known")) << tables;
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(20), [&] {
    TSHeartbeatResponsePB beat;
    ASSERT_OK(Call(&MasterServiceProxy::TSHeartbeat, ts.MakeHeartbeat(false, false), &beat));
    const std::string page = HttpGet(port, "/tables");
    ASSERT_NE(std::string::npos, page.find("TABLET_RUNNING")) << page;
    EXPECT_NE(std::string::npos, page.find(ts.uuid() + "</td><td>1</td>")) << page;  // leader, term
    EXPECT_NE(std::string::npos, page.find(" LEADER, term 1, 0 / 0 / 0")) << page;
  });
  const std::string metrics = HttpGet(port, "/metrics?metrics=table_locations_cache");
  EXPECT_NE(std::string::npos, metrics.find("table_locations_cache_hits_total")) << metrics;
}

TEST_F(MasterTest, RestartKeepsTheCatalog) {
  FakeTabletServer ts;
  ASSERT_OK(ts.Start());
  ASSERT_NO_FATAL_FAILURE(Register(ts));
  CreateTableResponsePB created;
  ASSERT_OK(Call(&MasterServiceProxy::CreateTable, MakeCreateTableRequest("t", 0, true, {1, 2}),
                 &created));
  ASSERT_FALSE(created.has_error());
  master_->Shutdown();
  master_.reset();
  ASSERT_NO_FATAL_FAILURE(StartMaster());
  ListTablesResponsePB list;
  ASSERT_OK(Call(&MasterServiceProxy::ListTables, ListTablesRequestPB(), &list));
  ASSERT_EQ(1, list.tables_size());
  EXPECT_EQ(created.table_id(), list.tables(0).id());
  EXPECT_EQ(3, list.tables(0).num_tablets());
}

// MasterAdminService over RPC: maintenance mode shows in ListTabletServers and on
// /tablet-servers and survives a restart; a live server is not unregistered; the
// replacement counters are in /metrics.
TEST_F(MasterTest, AdminServiceKeepsMaintenanceModeAcrossRestarts) {
  FakeTabletServer ts;
  ASSERT_OK(ts.Start());
  ASSERT_NO_FATAL_FAILURE(Register(ts));
  auto admin = [&](auto method, const auto& req, auto* resp) {
    MasterAdminServiceProxy proxy(client_, master_->bound_rpc_addresses()[0]);
    rpc::RpcController rpc;
    rpc.set_timeout(MonoDelta::FromSeconds(10));
    return (proxy.*method)(req, resp, &rpc);
  };
  ChangeTServerStateRequestPB enter;
  enter.set_uuid(ts.uuid());
  enter.set_change(ChangeTServerStateRequestPB::ENTER_MAINTENANCE_MODE);
  ChangeTServerStateResponsePB entered;
  ASSERT_OK(admin(&MasterAdminServiceProxy::ChangeTServerState, enter, &entered));
  ASSERT_FALSE(entered.has_error()) << entered.error().ShortDebugString();
  UnregisterTServerRequestPB unreg;
  unreg.set_uuid(ts.uuid());
  UnregisterTServerResponsePB refused;
  ASSERT_OK(admin(&MasterAdminServiceProxy::UnregisterTServer, unreg, &refused));
  EXPECT_EQ(MasterErrorPB::TABLET_SERVER_IS_LIVE, refused.error().code());

  auto state = [&] {
    ListTabletServersResponsePB list;
    EXPECT_OK(Call(&MasterServiceProxy::ListTabletServers, ListTabletServersRequestPB(), &list));
    return list.servers_size() == 1 ? list.servers(0).state() : TSERVER_STATE_NONE;
  };
  EXPECT_EQ(MAINTENANCE_MODE, state());
  const std::string page = HttpGet(master_->webserver()->port(), "/tablet-servers");
  EXPECT_NE(std::string::npos, page.find("<td>live</td><td>maintenance</td>")) << page;
  const std::string metrics =
      HttpGet(master_->webserver()->port(), "/metrics?name=master_replica_replacements");
  EXPECT_NE(std::string::npos, metrics.find("master_replica_replacements_started_total"))
      << metrics;
  EXPECT_NE(std::string::npos, metrics.find("master_replica_replacements_completed_total"));

  master_->Shutdown();
  master_.reset();
  ASSERT_NO_FATAL_FAILURE(StartMaster());
  ASSERT_NO_FATAL_FAILURE(Register(ts));
  EXPECT_EQ(MAINTENANCE_MODE, state());
  ChangeTServerStateRequestPB exit = enter;
  exit.set_change(ChangeTServerStateRequestPB::EXIT_MAINTENANCE_MODE);
  ChangeTServerStateResponsePB exited;
  ASSERT_OK(admin(&MasterAdminServiceProxy::ChangeTServerState, exit, &exited));
  ASSERT_FALSE(exited.has_error());
  EXPECT_EQ(TSERVER_STATE_NONE, state());
  EXPECT_NE(std::string::npos,
            HttpGet(master_->webserver()->port(), "/tablet-servers").find("<td>normal</td>"));
  // A decommission shows the same way; the other admin calls answer over RPC.
  ChangeTServerStateRequestPB decommission = enter;
  decommission.set_change(ChangeTServerStateRequestPB::START_DECOMMISSION);
  ChangeTServerStateResponsePB started;
  ASSERT_OK(admin(&MasterAdminServiceProxy::ChangeTServerState, decommission, &started));
  ASSERT_FALSE(started.has_error()) << started.error().ShortDebugString();
  EXPECT_EQ(DECOMMISSIONING, state());
  EXPECT_NE(std::string::npos, HttpGet(master_->webserver()->port(), "/tablet-servers")
                                   .find("<td>live</td><td>decommissioning</td>"));
  MoveReplicaRequestPB move;
  move.set_tablet_id("no-such-tablet");
  MoveReplicaResponsePB moved;
  ASSERT_OK(admin(&MasterAdminServiceProxy::MoveReplica, move, &moved));
  EXPECT_EQ(MasterErrorPB::TABLET_NOT_FOUND, moved.error().code());
  SetReplicationFactorRequestPB rf;
  rf.mutable_table()->set_table_name("no-such-table");
  rf.set_num_replicas(3);
  SetReplicationFactorResponsePB rf_resp;
  ASSERT_OK(admin(&MasterAdminServiceProxy::SetReplicationFactor, rf, &rf_resp));
  EXPECT_EQ(MasterErrorPB::TABLE_NOT_FOUND, rf_resp.error().code());
  RebalanceRequestPB rebalance;
  rebalance.set_dry_run(true);
  RebalanceResponsePB plan;
  ASSERT_OK(admin(&MasterAdminServiceProxy::Rebalance, rebalance, &plan));
  EXPECT_FALSE(plan.has_error());
  EXPECT_TRUE(plan.balanced());
  EXPECT_EQ(0, plan.before_size()) << "a decommissioning server is no rebalancing target";
}

}  // namespace nyala::master
