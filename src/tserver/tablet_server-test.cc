// Service-level tests: an in-process TabletServer on loopback, called through a
// client Messenger and Proxies; heartbeats to a fake master service; web pages.
#include <arpa/inet.h>
#include <gflags/gflags.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <deque>
#include <future>

#include "common/row_block.h"
#include "common/test_util.h"
#include "common/wire_protocol.h"
#include "master/master.service.h"
#include "rpc/fake_service_test_util.h"
#include "rpc/messenger.h"
#include "rpc/rpc_context.h"
#include "rpc/rpc_controller.h"
#include "tserver/heartbeater.h"
#include "tserver/tablet_manager.h"
#include "tserver/tablet_server.h"
#include "tserver/tablet_service.h"
#include "tserver/tserver.proxy.h"
#include "tserver/tserver_admin.proxy.h"
#include "tserver/tserver_test_util.h"

DECLARE_int32(fault_injection_log_sync_delay_ms);
DECLARE_int32(heartbeat_interval_ms);
DECLARE_int32(rpc_num_service_threads);
DECLARE_int32(tablet_transaction_memory_limit_mb);
DECLARE_int32(update_tablet_stats_interval_ms);

namespace nyala::tserver {
namespace {

using namespace testing;  // NOLINT(build/namespaces)

// A master that records heartbeats and answers as told; its other methods are not
// used by a tablet server and answer NO_SUCH_METHOD.
class FakeMaster : public master::MasterServiceIf {
 public:
  void TSHeartbeat(const master::TSHeartbeatRequestPB* req, master::TSHeartbeatResponsePB* resp,
                   rpc::RpcContext* ctx) override {
    MutexLock l(mu_);
    beats_.push_back(*req);
    resp->set_needs_reregister(ask_reregister_);
    ask_reregister_ = false;
    resp->set_acked_report_sequence_number(req->tablet_report().sequence_number());
    ctx->RespondSuccess();
  }
  NYALA_FAKE_UNIMPLEMENTED(master, Ping)
  NYALA_FAKE_UNIMPLEMENTED(master, CreateTable)
  NYALA_FAKE_UNIMPLEMENTED(master, IsCreateTableDone)
  NYALA_FAKE_UNIMPLEMENTED(master, DeleteTable)
  NYALA_FAKE_UNIMPLEMENTED(master, ListTables)
  NYALA_FAKE_UNIMPLEMENTED(master, GetTableSchema)
  NYALA_FAKE_UNIMPLEMENTED(master, GetTableLocations)
  NYALA_FAKE_UNIMPLEMENTED(master, ListTabletServers)
  NYALA_FAKE_UNIMPLEMENTED(master, GetMasterRegistration)
  NYALA_FAKE_UNIMPLEMENTED(master, ListTablets)
  NYALA_FAKE_UNIMPLEMENTED(master, GetTableStatistics)
  NYALA_FAKE_UNIMPLEMENTED(master, AlterTable)
  NYALA_FAKE_UNIMPLEMENTED(master, IsAlterTableDone)

  std::vector<master::TSHeartbeatRequestPB> beats() {
    MutexLock l(mu_);
    return {beats_.begin(), beats_.end()};
  }
  void AskReregister() {
    MutexLock l(mu_);
    ask_reregister_ = true;
  }

 private:
  Mutex mu_;
  std::deque<master::TSHeartbeatRequestPB> beats_ GUARDED_BY(mu_);
  bool ask_reregister_ GUARDED_BY(mu_) = false;
};

class TabletServerTest : public NyalaTest {
 protected:
  void SetUp() override {
    NyalaTest::SetUp();
    FLAGS_heartbeat_interval_ms = 50;
    schema_ = SeedSchema();
    // The fake master.
    rpc::MessengerOptions mo;
    mo.name = "fake-master";
    mo.num_reactors = 1;
    auto m = rpc::Messenger::Create(mo);
    ASSERT_OK(m.status());
    master_msgr_ = *m;
    auto fake = std::make_unique<FakeMaster>();
    master_ = fake.get();
    ASSERT_OK(master_msgr_->RegisterService(std::move(fake), 1, 50));
    rpc::Sockaddr master_addr;
    ASSERT_OK(master_msgr_->AddListener(rpc::Sockaddr::Loopback(0), &master_addr));
    // The tablet server.
    server::ServerBaseOptions opts;
    opts.kind = "tserver";
    opts.data_dirs = {test_dir() + "/ts"};
    opts.rpc_bind_addresses = "127.0.0.1:0";
    opts.webserver_port = 0;
    opts.num_reactors = 1;
    server_ = std::make_unique<TabletServer>(
        opts, std::vector<rpc::HostPort>{rpc::HostPort("127.0.0.1", master_addr.port())});
    ASSERT_OK(server_->Init());
    ASSERT_OK(server_->Start());
    mo.name = "client";
    auto c = rpc::Messenger::Create(mo);
    ASSERT_OK(c.status());
    client_ = *c;
    const rpc::Sockaddr addr = server_->bound_rpc_addresses()[0];
    proxy_ = std::make_unique<TabletServerServiceProxy>(client_, addr);
    admin_ = std::make_unique<TabletServerAdminServiceProxy>(client_, addr);
  }
  void TearDown() override {
    if (client_) client_->Shutdown();
    if (server_) server_->Shutdown();
    if (master_msgr_) master_msgr_->Shutdown();
    NyalaTest::TearDown();
  }
  // Calls `method` of proxy `p` (e.g. &TabletServerServiceProxy::Write) with a 10 s timeout.
  template <typename P, typename Req, typename Resp>
  Status Call(const P& p, Status (P::*method)(const Req&, Resp*, rpc::RpcController*) const,
              const std::type_identity_t<Req>& req, Resp* resp, rpc::RpcController* rpc = nullptr) {
    rpc::RpcController local;
    if (!rpc) rpc = &local;
    rpc->set_timeout(MonoDelta::FromSeconds(10));
    return (p.*method)(req, resp, rpc);
  }
  // Writes seed rows [start, start + count) to tablet `id` and expects them applied
  // (a tablet just created leads once such a write is applied).
  void WriteSeedRows(const std::string& id, int64_t start, int count) {
    WriteResponsePB resp;
    ASSERT_OK(Call(*proxy_, &TabletServerServiceProxy::Write,
                   MakeSeedWrite(id, schema_, start, count), &resp));
    ASSERT_FALSE(resp.has_error()) << resp.ShortDebugString();
  }
  void CreateTablet(const std::string& id, const std::string& table = "test_table") {
    CreateTabletResponsePB resp;
    ASSERT_OK(Call(*admin_, &TabletServerAdminServiceProxy::CreateTablet,
                   MakeCreateTablet(id, schema_, table), &resp));
    ASSERT_FALSE(resp.has_error()) << resp.ShortDebugString();
  }

  Schema schema_;
  std::shared_ptr<rpc::Messenger> master_msgr_;
  FakeMaster* master_ = nullptr;
  std::unique_ptr<TabletServer> server_;
  std::shared_ptr<rpc::Messenger> client_;
  std::unique_ptr<TabletServerServiceProxy> proxy_;
  std::unique_ptr<TabletServerAdminServiceProxy> admin_;
};

TEST_F(TabletServerTest, WriteGetAndScanOverRpc) {
  ASSERT_NO_FATAL_FAILURE(CreateTablet("t1"));
  WriteResponsePB wresp;
  ASSERT_OK(Call(*proxy_, &TabletServerServiceProxy::Write, MakeSeedWrite("t1", schema_, 0, 500),
                 &wresp));
  ASSERT_FALSE(wresp.has_error());
  EXPECT_EQ(wresp.rows_applied(), 500);
  // The write went through the tablet's Raft group (of one) and its synced log.
  const std::string metrics = server_->metrics()->ToPrometheusText();
  EXPECT_THAT(metrics, ::testing::ContainsRegex("consensus_log_syncs_total [1-9]"));
  EXPECT_THAT(metrics, ::testing::ContainsRegex("tserver_replicas_leading 1"));

  GetRequestPB greq;
  greq.set_tablet_id("t1");
  greq.add_keys(EncodedKey(schema_, 42));
  greq.add_keys(EncodedKey(schema_, 4242));
  GetResponsePB gresp;
  rpc::RpcController grpc;
  ASSERT_OK(Call(*proxy_, &TabletServerServiceProxy::Get, greq, &gresp, &grpc));
  ASSERT_FALSE(gresp.has_error());
  ASSERT_EQ(gresp.found_size(), 2);
  EXPECT_TRUE(gresp.found(0));
  EXPECT_FALSE(gresp.found(1));
  Slice rows, indirect;
  ASSERT_OK(grpc.GetInboundSidecar(gresp.data().rows_sidecar(), &rows));
  ASSERT_OK(grpc.GetInboundSidecar(gresp.data().indirect_data_sidecar(), &indirect));
  RowBlock block;
  ASSERT_OK(RowBlock::Parse(&schema_, gresp.data().num_rows(), rows, indirect, &block));
  std::vector<Cell> cells(schema_.num_columns());
  block.GetRow(0, cells.data());
  EXPECT_TRUE(MatchesSeedRow(cells.data(), 42));

  // A scan in small batches over RPC.
  ScanRequestPB sreq;
  sreq.mutable_new_scan_request()->set_tablet_id("t1");
  sreq.set_batch_size_bytes(4096);
  int64_t total = 0;
  for (uint32_t seq = 0; seq < 1000; seq++) {
    ScanResponsePB sresp;
    rpc::RpcController srpc;
    ASSERT_OK(Call(*proxy_, &TabletServerServiceProxy::Scan, sreq, &sresp, &srpc));
    ASSERT_FALSE(sresp.has_error()) << sresp.ShortDebugString();
    ASSERT_OK(srpc.GetInboundSidecar(sresp.data().rows_sidecar(), &rows));
    ASSERT_OK(srpc.GetInboundSidecar(sresp.data().indirect_data_sidecar(), &indirect));
    ASSERT_OK(RowBlock::Parse(&schema_, sresp.data().num_rows(), rows, indirect, &block));
    for (int r = 0; r < block.num_rows(); r++) {
      block.GetRow(r, cells.data());
      ASSERT_EQ(cells[0].int_value(), total + r);
    }
    total += block.num_rows();
    if (!sresp.has_more_results()) break;
    if (seq == 0) {
      ScannerKeepAliveRequestPB ka;
      ka.set_scanner_id(sresp.scanner_id());
      ScannerKeepAliveResponsePB kresp;
      ASSERT_OK(Call(*proxy_, &TabletServerServiceProxy::ScannerKeepAlive, ka, &kresp));
      EXPECT_FALSE(kresp.has_error());
    }
    sreq.Clear();
    sreq.set_scanner_id(sresp.scanner_id());
    sreq.set_call_seq_id(seq + 1);
    sreq.set_batch_size_bytes(4096);
  }
  EXPECT_EQ(total, 500);

  // Snapshot scans are refused, not answered with the latest rows.
  ScanRequestPB snap;
  snap.mutable_new_scan_request()->set_tablet_id("t1");
  snap.mutable_new_scan_request()->set_read_mode(READ_AT_SNAPSHOT);
  ScanResponsePB snap_resp;
  ASSERT_OK(Call(*proxy_, &TabletServerServiceProxy::Scan, snap, &snap_resp));
  ASSERT_TRUE(snap_resp.has_error());
  EXPECT_EQ(snap_resp.error().code(), TabletServerErrorPB::INVALID_SCAN_SPEC);
  EXPECT_EQ(snap_resp.error().status().code(), Status::kNotSupported);
  EXPECT_EQ(snap_resp.data().num_rows(), 0);

  PingResponsePB presp;
  ASSERT_OK(Call(*proxy_, &TabletServerServiceProxy::Ping, PingRequestPB(), &presp));
}

// A write's stages on the leader are timed into tserver_write_stage_duration_seconds, and while
// it runs /rpcz says which one it is in: here, waiting for a slow log sync.
TEST_F(TabletServerTest, WriteStagesAreTimedAndShownWhileTheWriteRuns) {
  ASSERT_NO_FATAL_FAILURE(CreateTablet("t1"));
  ASSERT_NO_FATAL_FAILURE(WriteSeedRows("t1", 0, 10));
  MetricRegistry* m = server_->metrics();
  auto stage = [&](const char* name) {
    return m->FindOrCreateHistogram("tserver_write_stage_duration_seconds", "", {{"stage", name}});
  };
  for (const char* s : {"queue", "prepare", "lock_wait", "handoff", "append", "commit",
                        "leader_sync", "apply", "respond"}) {
    EXPECT_EQ(stage(s)->TotalCount(), 1) << s;
  }
  EXPECT_GE(m->FindOrCreateHistogram("consensus_log_sync_duration_seconds", "")->TotalCount(), 1);
  EXPECT_GE(m->FindOrCreateHistogram("consensus_log_append_duration_seconds", "")->TotalCount(), 1);

  gflags::FlagSaver saver;
  FLAGS_fault_injection_log_sync_delay_ms = 300;
  WriteResponsePB resp;
  rpc::RpcController rpc;
  rpc.set_timeout(MonoDelta::FromSeconds(10));
  std::promise<void> done;
  proxy_->WriteAsync(MakeSeedWrite("t1", schema_, 10, 10), &resp, &rpc,
                     [&done] { done.set_value(); });
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(10), [&] {
    std::string states;
    for (const rpc::RunningCallInfo& c : server_->messenger()->DumpRunningCalls()) {
      if (c.inbound && c.method == "Write") states += c.state + "\n";
    }
    ASSERT_THAT(states, ::testing::HasSubstr("running: replicating: waiting for this server's "
                                             "log sync and a majority of replicas"));
  });
  FLAGS_fault_injection_log_sync_delay_ms = 0;
  ASSERT_EQ(done.get_future().wait_for(std::chrono::seconds(10)), std::future_status::ready);
  ASSERT_OK(rpc.status());
  ASSERT_FALSE(resp.has_error()) << resp.ShortDebugString();
  EXPECT_EQ(stage("leader_sync")->TotalCount(), 2);
  EXPECT_GE(stage("leader_sync")->MaxValue(), 250'000);
  EXPECT_GE(stage("commit")->MaxValue(), 250'000);  // a group of one waits for its own sync
}

// A write waits for its replication without a service thread: with every log sync
// slowed down, more writes wait at once than the server has service threads, and all
// of them then finish.
TEST_F(TabletServerTest, WritesWaitForReplicationWithoutHoldingAServiceThread) {
  ASSERT_NO_FATAL_FAILURE(CreateTablet("t1"));
  ASSERT_NO_FATAL_FAILURE(WriteSeedRows("t1", -1, 1));
  constexpr int kWrites = 3 * 10;
  ASSERT_LT(FLAGS_rpc_num_service_threads, kWrites / 2);
  gflags::FlagSaver saver;
  FLAGS_fault_injection_log_sync_delay_ms = 500;
  std::vector<WriteResponsePB> resps(kWrites);
  std::vector<rpc::RpcController> rpcs(kWrites);
  std::vector<std::promise<void>> done(kWrites);
  for (int i = 0; i < kWrites; i++) {
    rpcs[i].set_timeout(MonoDelta::FromSeconds(30));
    proxy_->WriteAsync(MakeSeedWrite("t1", schema_, i * 10, 10), &resps[i], &rpcs[i],
                       [&done, i] { done[i].set_value(); });
  }
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(20), [&] {
    int replicating = 0;
    std::string states;
    for (const rpc::RunningCallInfo& c : server_->messenger()->DumpRunningCalls()) {
      if (!c.inbound || c.method != "Write") continue;
      states += c.state + "\n";
      if (c.state.find("replicating") != std::string::npos) replicating++;
    }
    ASSERT_GT(replicating, FLAGS_rpc_num_service_threads) << states;
  });
  FLAGS_fault_injection_log_sync_delay_ms = 0;
  for (int i = 0; i < kWrites; i++) {
    ASSERT_EQ(done[i].get_future().wait_for(std::chrono::seconds(30)), std::future_status::ready);
    ASSERT_OK(rpcs[i].status());
    EXPECT_FALSE(resps[i].has_error()) << resps[i].ShortDebugString();
    EXPECT_EQ(resps[i].rows_applied(), 10);
  }
}

// Writes in flight hold at most --tablet_transaction_memory_limit_mb of commands: one
// past it is refused with THROTTLED, writing nothing, and taken once the others finish.
TEST_F(TabletServerTest, WritesPastTheMemoryLimitAreThrottled) {
  ASSERT_NO_FATAL_FAILURE(CreateTablet("t1"));
  ASSERT_NO_FATAL_FAILURE(WriteSeedRows("t1", -1, 1));
  gflags::FlagSaver saver;
  FLAGS_tablet_transaction_memory_limit_mb = 1;
  FLAGS_fault_injection_log_sync_delay_ms = 2000;
  // Commands of more than half a MiB each: the first is taken (nothing is in flight),
  // the second would pass the limit.
  const WriteRequestPB big = MakeSeedWrite("t1", schema_, 0, 40000);
  WriteResponsePB first;
  rpc::RpcController first_rpc;
  first_rpc.set_timeout(MonoDelta::FromSeconds(30));
  std::promise<void> first_done;
  proxy_->WriteAsync(big, &first, &first_rpc, [&] { first_done.set_value(); });
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(10), [&] {
    std::shared_ptr<Tablet> t = server_->tablet_manager()->Lookup("t1");
    ASSERT_TRUE(t);
    ASSERT_EQ(t->writes_in_flight(), 1);
    ASSERT_GT(t->write_bytes_in_flight(), 512 * 1024);
  });
  WriteResponsePB second;
  ASSERT_OK(Call(*proxy_, &TabletServerServiceProxy::Write,
                 MakeSeedWrite("t1", schema_, 50000, 40000), &second));
  ASSERT_TRUE(second.has_error());
  EXPECT_EQ(second.error().code(), TabletServerErrorPB::THROTTLED);
  EXPECT_THAT(second.error().status().message(),
              ::testing::HasSubstr("--tablet_transaction_memory_limit_mb"));
  FLAGS_fault_injection_log_sync_delay_ms = 0;
  ASSERT_EQ(first_done.get_future().wait_for(std::chrono::seconds(30)), std::future_status::ready);
  ASSERT_OK(first_rpc.status());
  EXPECT_EQ(first.rows_applied(), 40000);
  // Nothing of the refused write was stored; taken now.
  GetRequestPB greq;
  greq.set_tablet_id("t1");
  greq.add_keys(EncodedKey(schema_, 50000));
  GetResponsePB gresp;
  ASSERT_OK(Call(*proxy_, &TabletServerServiceProxy::Get, greq, &gresp));
  ASSERT_EQ(gresp.found_size(), 1);
  EXPECT_FALSE(gresp.found(0));
  WriteResponsePB retried;
  ASSERT_OK(Call(*proxy_, &TabletServerServiceProxy::Write,
                 MakeSeedWrite("t1", schema_, 50000, 40000), &retried));
  EXPECT_FALSE(retried.has_error()) << retried.error().ShortDebugString();
  EXPECT_EQ(retried.rows_applied(), 40000);
}

// A Get key that does not decode for the tablet's key columns (an INT64 key here) is
// the caller's error, INVALID_KEY with an InvalidArgument status, never "not found";
// the server goes on answering good Gets.
TEST_F(TabletServerTest, GetWithAKeyThatDoesNotDecodeIsInvalidArgument) {
  ASSERT_NO_FATAL_FAILURE(CreateTablet("t1"));
  ASSERT_NO_FATAL_FAILURE(WriteSeedRows("t1", 0, 10));
  const std::string good = EncodedKey(schema_, 3);
  for (const std::string& bad : {good.substr(0, 7), good + "x", std::string()}) {
    SCOPED_TRACE(bad.size());
    GetRequestPB greq;
    greq.set_tablet_id("t1");
    greq.add_keys(good);
    greq.add_keys(bad);
    GetResponsePB gresp;
    ASSERT_OK(Call(*proxy_, &TabletServerServiceProxy::Get, greq, &gresp));
    ASSERT_TRUE(gresp.has_error());
    EXPECT_EQ(TabletServerErrorPB::INVALID_KEY, gresp.error().code());
    EXPECT_EQ(Status::kInvalidArgument, gresp.error().status().code())
        << gresp.error().status().message();
    EXPECT_EQ(0, gresp.found_size());
  }
  GetRequestPB greq;
  greq.set_tablet_id("t1");
  greq.add_keys(good);
  GetResponsePB gresp;
  ASSERT_OK(Call(*proxy_, &TabletServerServiceProxy::Get, greq, &gresp));
  ASSERT_FALSE(gresp.has_error());
  EXPECT_TRUE(gresp.found(0));
}

TEST_F(TabletServerTest, GetRunsOnTheReactorWhenItsRowsAreInMemory) {
  ASSERT_NO_FATAL_FAILURE(CreateTablet("t1"));
  WriteResponsePB wresp;
  ASSERT_OK(Call(*proxy_, &TabletServerServiceProxy::Write, MakeSeedWrite("t1", schema_, 0, 100),
                 &wresp));
  ASSERT_FALSE(wresp.has_error());
  const MetricLabels labels = {{"service", TabletServerServiceIf::kServiceName},
                               {"method", TabletServerServiceIf::kGetMethodName}};
  Counter* fallbacks =
      server_->metrics()->FindOrCreateCounter("rpc_reactor_fallbacks_total", "", labels);
  Counter* calls = server_->metrics()->FindOrCreateCounter("rpc_calls_total", "", labels);
  auto get = [&](const std::string& tablet, int64_t key, GetResponsePB* resp) {
    GetRequestPB req;
    req.set_tablet_id(tablet);
    req.add_keys(EncodedKey(schema_, key));
    return Call(*proxy_, &TabletServerServiceProxy::Get, req, resp);
  };
  // In the memtable: answered on the reactor.
  GetResponsePB resp;
  ASSERT_OK(get("t1", 42, &resp));
  ASSERT_FALSE(resp.has_error());
  ASSERT_EQ(resp.found_size(), 1);
  EXPECT_TRUE(resp.found(0));
  EXPECT_EQ(fallbacks->value(), 0);
  // An error is answered (and logged) by a service thread.
  resp.Clear();
  ASSERT_OK(get("no-such-tablet", 42, &resp));
  EXPECT_EQ(resp.error().code(), TabletServerErrorPB::TABLET_NOT_FOUND);
  EXPECT_EQ(fallbacks->value(), 1);
  // More keys than a reactor thread should look up: a service thread does it.
  GetRequestPB many;
  many.set_tablet_id("t1");
  for (int k = 0; k < 40; k++) many.add_keys(EncodedKey(schema_, k));
  resp.Clear();
  ASSERT_OK(Call(*proxy_, &TabletServerServiceProxy::Get, many, &resp));
  ASSERT_EQ(resp.found_size(), 40);
  EXPECT_EQ(resp.data().num_rows(), 40);
  EXPECT_EQ(fallbacks->value(), 2);
  // (A Get that needs the disk is passed on too: see tablet-test.)
  EXPECT_EQ(calls->value(), 3);
}

TEST_F(TabletServerTest, RetriedWriteIsAnsweredNotReapplied) {
  ASSERT_NO_FATAL_FAILURE(CreateTablet("t1"));
  rpc::RequestIdPB id;
  id.set_client_id("client-a");
  id.set_seq_no(7);
  id.set_first_incomplete_seq_no(7);
  WriteRequestPB req = MakeSeedWrite("t1", schema_, 0, 10);
  WriteResponsePB first, retry;
  rpc::RpcController rpc1, rpc2;
  rpc1.set_request_id(id);
  rpc2.set_request_id(id);
  ASSERT_OK(Call(*proxy_, &TabletServerServiceProxy::Write, req, &first, &rpc1));
  EXPECT_EQ(first.rows_applied(), 10);
  ASSERT_OK(Call(*proxy_, &TabletServerServiceProxy::Write, req, &retry, &rpc2));
  EXPECT_EQ(retry.rows_applied(), 10);
  EXPECT_EQ(retry.per_row_errors_size(), 0);  // not ALREADY_PRESENT
  // Without a request id the same block is applied again: every row is a duplicate.
  WriteResponsePB plain;
  ASSERT_OK(Call(*proxy_, &TabletServerServiceProxy::Write, req, &plain));
  EXPECT_EQ(plain.per_row_errors_size(), 10);
  // Once the client moves past 7, the answer is forgotten; a late retry is refused.
  rpc::RequestIdPB next = id;
  next.set_seq_no(8);
  next.set_first_incomplete_seq_no(8);
  rpc::RpcController rpc3, rpc4;
  rpc3.set_request_id(next);
  WriteResponsePB r3, r4;
  ASSERT_OK(Call(*proxy_, &TabletServerServiceProxy::Write, MakeSeedWrite("t1", schema_, 100, 1),
                 &r3, &rpc3));
  rpc4.set_request_id(id);
  EXPECT_FALSE(Call(*proxy_, &TabletServerServiceProxy::Write, req, &r4, &rpc4).ok());
}

// The value of the series `series` (name{labels}, labels sorted by name) in the
// Prometheus text `text`; -1 when absent.
int64_t SeriesValue(const std::string& text, const std::string& series) {
  const std::string prefix = "\n" + series + " ";
  const size_t at = text.find(prefix);
  if (at == std::string::npos) return -1;
  return std::stoll(text.substr(at + prefix.size()));
}

TEST_F(TabletServerTest, PerTabletMetricsCountWritesGetsAndScansAndGoWithTheTablet) {
  ASSERT_NO_FATAL_FAILURE(CreateTablet("t1"));
  ASSERT_NO_FATAL_FAILURE(CreateTablet("t2", "<b>other</b>"));
  // t1: 20 inserts, 5 upserts (3 of them new rows), 3 updates, 2 deletes, in 4 RPCs.
  std::vector<Row> del_rows(2, Row(&schema_));
  ASSERT_OK(del_rows[0].Set(0, Cell::Int64(3)));
  ASSERT_OK(del_rows[1].Set(0, Cell::Int64(4)));
  for (const WriteRequestPB& req :
       {MakeSeedWrite("t1", schema_, 0, 20),
        MakeSeedWrite("t1", schema_, 18, 5, RowOpType::kUpsert),
        MakeSeedWrite("t1", schema_, 0, 3, RowOpType::kUpdate),
        MakeWrite("t1", schema_,
                  {{RowOpType::kDelete, &del_rows[0]}, {RowOpType::kDelete, &del_rows[1]}})}) {
    WriteResponsePB resp;
    ASSERT_OK(Call(*proxy_, &TabletServerServiceProxy::Write, req, &resp));
    ASSERT_FALSE(resp.has_error()) << resp.ShortDebugString();
    ASSERT_EQ(resp.per_row_errors_size(), 0) << resp.ShortDebugString();
  }
  WriteResponsePB wresp;
  ASSERT_OK(
      Call(*proxy_, &TabletServerServiceProxy::Write, MakeSeedWrite("t2", schema_, 0, 7), &wresp));
  ASSERT_EQ(wresp.rows_applied(), 7);
  // t1: two Gets of 3 and 1 keys.
  for (int n : {3, 1}) {
    GetRequestPB greq;
    greq.set_tablet_id("t1");
    for (int i = 0; i < n; i++) greq.add_keys(EncodedKey(schema_, 10 + i));
    GetResponsePB gresp;
    ASSERT_OK(Call(*proxy_, &TabletServerServiceProxy::Get, greq, &gresp));
    ASSERT_FALSE(gresp.has_error()) << gresp.ShortDebugString();
  }
  // t1: one Scan reading the 21 rows left, returning those where c IS NULL (k % 7 == 3:
  // 10 and 17; 3 was deleted).
  ScanRequestPB sreq;
  sreq.mutable_new_scan_request()->set_tablet_id("t1");
  sreq.mutable_new_scan_request()->add_predicates()->set_column("c");
  sreq.mutable_new_scan_request()->mutable_predicates(0)->mutable_is_null();
  ScanResponsePB sresp;
  ASSERT_OK(Call(*proxy_, &TabletServerServiceProxy::Scan, sreq, &sresp));
  ASSERT_FALSE(sresp.has_error()) << sresp.ShortDebugString();
  ASSERT_EQ(sresp.data().num_rows(), 2);

  const std::string t1 = "table=\"test_table\",tablet_id=\"t1\"";
  const std::string t2 = "table=\"<b>other</b>\",tablet_id=\"t2\"";
  std::string text = server_->metrics()->ToPrometheusText();
  EXPECT_EQ(SeriesValue(text, "tablet_write_requests_total{" + t1 + "}"), 4) << text;
  EXPECT_EQ(SeriesValue(text, "tablet_rows_written_total{op=\"insert\"," + t1 + "}"), 20);
  EXPECT_EQ(SeriesValue(text, "tablet_rows_written_total{op=\"upsert\"," + t1 + "}"), 5);
  EXPECT_EQ(SeriesValue(text, "tablet_rows_written_total{op=\"update\"," + t1 + "}"), 3);
  EXPECT_EQ(SeriesValue(text, "tablet_rows_written_total{op=\"delete\"," + t1 + "}"), 2);
  EXPECT_EQ(SeriesValue(text, "tablet_get_requests_total{" + t1 + "}"), 2);
  EXPECT_EQ(SeriesValue(text, "tablet_get_keys_total{" + t1 + "}"), 4);
  EXPECT_EQ(SeriesValue(text, "tablet_scan_requests_total{" + t1 + "}"), 1);
  EXPECT_EQ(SeriesValue(text, "tablet_rows_scanned_total{" + t1 + "}"), 21);
  EXPECT_EQ(SeriesValue(text, "tablet_scan_rows_returned_total{" + t1 + "}"), 2);
  EXPECT_EQ(SeriesValue(text, "tablet_write_requests_total{" + t2 + "}"), 1);
  EXPECT_EQ(SeriesValue(text, "tablet_rows_written_total{op=\"insert\"," + t2 + "}"), 7);
  EXPECT_EQ(SeriesValue(text, "tablet_get_requests_total{" + t2 + "}"), 0);
  // The per-server totals are still there.
  EXPECT_EQ(SeriesValue(text, "tserver_rows_written_total{op=\"insert\"}"), 27);
  EXPECT_EQ(SeriesValue(text, "tserver_write_requests_total"), 5);
  // And the /tablets page shows them, the table name escaped.
  std::string page = HttpGet(server_->webserver()->port(), "/tablets");
  EXPECT_NE(page.find("<td>20 / 5 / 3 / 2</td>"), std::string::npos) << page;
  EXPECT_NE(page.find("<td>21 / 2</td>"), std::string::npos) << page;
  EXPECT_NE(page.find("&lt;b&gt;other&lt;/b&gt;"), std::string::npos) << page;

  // Deleting t1 removes its series and only those.
  DeleteTabletRequestPB dreq;
  dreq.set_tablet_id("t1");
  DeleteTabletResponsePB dresp;
  ASSERT_OK(Call(*admin_, &TabletServerAdminServiceProxy::DeleteTablet, dreq, &dresp));
  ASSERT_FALSE(dresp.has_error()) << dresp.ShortDebugString();
  text = server_->metrics()->ToPrometheusText();
  EXPECT_EQ(text.find("tablet_id=\"t1\""), std::string::npos) << text;
  EXPECT_EQ(server_->metrics()->ToJson().find("\"t1\""), std::string::npos);
  EXPECT_EQ(SeriesValue(text, "tablet_rows_written_total{op=\"insert\"," + t2 + "}"), 7);
  EXPECT_EQ(SeriesValue(text, "tserver_rows_written_total{op=\"insert\"}"), 27);
}

TEST_F(TabletServerTest, AdminServiceCreatesListsAndDeletes) {
  ASSERT_NO_FATAL_FAILURE(CreateTablet("t1", "<b>table</b>"));
  ASSERT_NO_FATAL_FAILURE(CreateTablet("t1", "<b>table</b>"));  // identical: no-op
  CreateTabletResponsePB cresp;
  ASSERT_OK(Call(*admin_, &TabletServerAdminServiceProxy::CreateTablet,
                 MakeCreateTablet("t1", schema_, "other"), &cresp));
  EXPECT_EQ(cresp.error().code(), TabletServerErrorPB::TABLET_ALREADY_EXISTS);
  CreateTabletRequestPB wrong = MakeCreateTablet("t2", schema_);
  wrong.set_dest_uuid("not-this-server");
  ASSERT_OK(Call(*admin_, &TabletServerAdminServiceProxy::CreateTablet, wrong, &cresp));
  EXPECT_EQ(cresp.error().code(), TabletServerErrorPB::WRONG_SERVER_UUID);

  ListTabletsResponsePB lresp;
  ASSERT_OK(
      Call(*admin_, &TabletServerAdminServiceProxy::ListTablets, ListTabletsRequestPB(), &lresp));
  ASSERT_EQ(lresp.tablets_size(), 1);
  EXPECT_EQ(lresp.tablets(0).tablet_id(), "t1");
  EXPECT_EQ(lresp.tablets(0).state(), TABLET_DATA_READY);

  // Web pages list it, escaped.
  const int port = server_->webserver()->port();
  std::string page = HttpGet(port, "/tablets");
  EXPECT_NE(page.find("&lt;b&gt;table&lt;/b&gt;"), std::string::npos) << page;
  EXPECT_EQ(page.find("<b>table</b>"), std::string::npos);
  EXPECT_NE(HttpGet(port, "/scans").find("Open scanners (0)"), std::string::npos);

  DeleteTabletRequestPB dreq;
  dreq.set_tablet_id("t1");
  DeleteTabletResponsePB dresp;
  ASSERT_OK(Call(*admin_, &TabletServerAdminServiceProxy::DeleteTablet, dreq, &dresp));
  EXPECT_FALSE(dresp.has_error());
  ASSERT_OK(Call(*admin_, &TabletServerAdminServiceProxy::DeleteTablet, dreq, &dresp));
  EXPECT_EQ(dresp.error().code(), TabletServerErrorPB::TABLET_NOT_FOUND);
  WriteResponsePB wresp;
  ASSERT_OK(
      Call(*proxy_, &TabletServerServiceProxy::Write, MakeSeedWrite("t1", schema_, 0, 1), &wresp));
  EXPECT_EQ(wresp.error().code(), TabletServerErrorPB::TABLET_NOT_FOUND);
}

// Membership changes and tombstones over the admin service: bad requests get their
// code and change nothing; a group of one refuses to lose its last voter, takes a
// learner whose server is known by address, and a tombstone is listed as one.
TEST_F(TabletServerTest, ChangeConfigAndTombstonesAnswerBadRequestsWithTheirCode) {
  ASSERT_NO_FATAL_FAILURE(CreateTablet("t1", "table"));
  auto change = [&](const ChangeConfigRequestPB& req) {
    ChangeConfigResponsePB resp;
    EXPECT_OK(Call(*admin_, &TabletServerAdminServiceProxy::ChangeConfig, req, &resp));
    return resp;
  };
  ChangeConfigRequestPB req;
  req.set_tablet_id("t1");
  req.mutable_peer()->set_permanent_uuid(server_->uuid());
  EXPECT_EQ(change(req).error().code(), TabletServerErrorPB::INVALID_CONFIG);  // no type
  req.set_type(static_cast<ChangeConfigTypePB>(99));
  EXPECT_EQ(change(req).error().code(), TabletServerErrorPB::INVALID_CONFIG);
  req.set_type(REMOVE_PEER);
  ChangeConfigResponsePB resp = change(req);
  EXPECT_EQ(resp.error().code(), TabletServerErrorPB::INVALID_CONFIG) << resp.ShortDebugString();
  EXPECT_NE(resp.error().status().message().find("last voter"), std::string::npos)
      << resp.ShortDebugString();
  req.set_type(ADD_LEARNER);
  req.mutable_peer()->set_permanent_uuid("");
  EXPECT_EQ(change(req).error().code(), TabletServerErrorPB::INVALID_CONFIG);  // no uuid
  req.mutable_peer()->set_permanent_uuid("0123456789abcdef0123456789abcdef");
  EXPECT_EQ(change(req).error().code(), TabletServerErrorPB::INVALID_CONFIG);  // no address
  req.mutable_peer()->set_host("127.0.0.1");
  req.mutable_peer()->set_port(1);
  req.set_tablet_id("no-such-tablet");
  EXPECT_EQ(change(req).error().code(), TabletServerErrorPB::TABLET_NOT_FOUND);
  req.set_tablet_id("t1");
  resp = change(req);
  EXPECT_FALSE(resp.has_error()) << resp.ShortDebugString();
  EXPECT_GT(resp.index(), 0u);
  resp = change(req);  // a member already
  EXPECT_EQ(resp.error().code(), TabletServerErrorPB::INVALID_CONFIG);

  DeleteTabletRequestPB dreq;
  dreq.set_tablet_id("no-such-tablet");
  dreq.set_delete_type(TABLET_DATA_TOMBSTONED);
  DeleteTabletResponsePB dresp;
  ASSERT_OK(Call(*admin_, &TabletServerAdminServiceProxy::DeleteTablet, dreq, &dresp));
  EXPECT_EQ(dresp.error().code(), TabletServerErrorPB::TABLET_NOT_FOUND);
  dreq.set_tablet_id("t1");
  ASSERT_OK(Call(*admin_, &TabletServerAdminServiceProxy::DeleteTablet, dreq, &dresp));
  EXPECT_FALSE(dresp.has_error()) << dresp.ShortDebugString();
  ListTabletsResponsePB lresp;
  ASSERT_OK(
      Call(*admin_, &TabletServerAdminServiceProxy::ListTablets, ListTabletsRequestPB(), &lresp));
  ASSERT_EQ(lresp.tablets_size(), 1);
  EXPECT_EQ(lresp.tablets(0).state(), TABLET_DATA_TOMBSTONED);
  EXPECT_FALSE(lresp.tablets(0).has_consensus());
  WriteResponsePB wresp;
  ASSERT_OK(
      Call(*proxy_, &TabletServerServiceProxy::Write, MakeSeedWrite("t1", schema_, 0, 1), &wresp));
  EXPECT_EQ(wresp.error().code(), TabletServerErrorPB::TABLET_NOT_FOUND);
  // A StartTabletCopy with a tablet id that is not a plain name is refused.
  StartTabletCopyRequestPB sreq;
  sreq.set_tablet_id("../t1");
  sreq.mutable_source()->set_permanent_uuid("0123456789abcdef0123456789abcdef");
  sreq.mutable_source()->set_host("127.0.0.1");
  sreq.mutable_source()->set_port(1);
  StartTabletCopyResponsePB sresp;
  ASSERT_OK(Call(*admin_, &TabletServerAdminServiceProxy::StartTabletCopy, sreq, &sresp));
  EXPECT_EQ(sresp.error().code(), TabletServerErrorPB::INVALID_CONFIG);
  // The tablets page lists the copies in progress (none), the metrics count them.
  const int port = server_->webserver()->port();
  EXPECT_NE(HttpGet(port, "/tablets").find("Tablet copies in progress (0)"), std::string::npos);
  const std::string metrics = HttpGet(port, "/metrics_prometheus");
  for (const char* m : {"tablet_copies_done_total", "tablet_copies_failed_total",
                        "tablet_copies_running", "tablet_copy_source_sessions"}) {
    EXPECT_NE(metrics.find(m), std::string::npos) << m;
  }
}

// A tablet created without peers is a group of one: ListTablets and the /tablets page
// show it leading, with its term, indexes and its one peer (this server); it has no
// other voter to hand leadership to; and the leadership counters count its election.
TEST_F(TabletServerTest, ReplicaStateOfAGroupOfOne) {
  ASSERT_NO_FATAL_FAILURE(CreateTablet("t1"));
  WriteResponsePB wresp;
  ASSERT_OK(
      Call(*proxy_, &TabletServerServiceProxy::Write, MakeSeedWrite("t1", schema_, 0, 5), &wresp));
  ASSERT_FALSE(wresp.has_error()) << wresp.ShortDebugString();
  const std::string uuid = server_->uuid();
  ListTabletsResponsePB lresp;
  // The group publishes its indexes a moment after it answers the write.
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(10), [&] {
    ASSERT_OK(
        Call(*admin_, &TabletServerAdminServiceProxy::ListTablets, ListTabletsRequestPB(), &lresp));
    ASSERT_EQ(lresp.tablets_size(), 1);
    ASSERT_EQ(2u, lresp.tablets(0).consensus().applied_index());
  });
  const master::ConsensusStatePB& c = lresp.tablets(0).consensus();
  EXPECT_EQ(master::LEADER, c.role());
  EXPECT_EQ(1u, c.term());
  EXPECT_EQ(uuid, c.leader_uuid());
  EXPECT_EQ(2u, c.committed_index());  // the leader's no-op, then the write
  EXPECT_EQ(2u, c.applied_index());
  EXPECT_EQ(2u, c.last_index());
  ASSERT_EQ(1, c.voter_uuids_size());
  EXPECT_EQ(uuid, c.voter_uuids(0));
  EXPECT_FALSE(lresp.tablets(0).has_failure());

  const std::string page = HttpGet(server_->webserver()->port(), "/tablets");
  for (const char* header : {"<th>Role</th>", "<th>Term</th>", "<th>Leader</th>",
                             "<th>Committed / applied / last index</th>", "<th>Peers</th>"}) {
    EXPECT_NE(page.find(header), std::string::npos) << header << " in " << page;
  }
  const std::string row = "<td class=\"role\">LEADER</td><td>1</td><td>" + uuid +
                          " (this server)</td><td>2 / 2 / 2</td><td>" + uuid +
                          " (this server)<br></td>";
  EXPECT_NE(page.find(row), std::string::npos) << page;

  LeaderStepDownRequestPB req;
  req.set_tablet_id("t1");
  LeaderStepDownResponsePB resp;
  ASSERT_OK(Call(*admin_, &TabletServerAdminServiceProxy::LeaderStepDown, req, &resp));
  EXPECT_EQ(TabletServerErrorPB::INVALID_CONFIG, resp.error().code());
  EXPECT_NE(resp.error().status().message().find("no other voter"), std::string::npos)
      << resp.ShortDebugString();
  req.set_new_leader_uuid(uuid);  // itself: not another voter
  ASSERT_OK(Call(*admin_, &TabletServerAdminServiceProxy::LeaderStepDown, req, &resp));
  EXPECT_EQ(TabletServerErrorPB::INVALID_CONFIG, resp.error().code());
  req.set_tablet_id("t2");
  ASSERT_OK(Call(*admin_, &TabletServerAdminServiceProxy::LeaderStepDown, req, &resp));
  EXPECT_EQ(TabletServerErrorPB::TABLET_NOT_FOUND, resp.error().code());
  req.set_tablet_id("t1");
  req.set_dest_uuid("not-this-server");
  ASSERT_OK(Call(*admin_, &TabletServerAdminServiceProxy::LeaderStepDown, req, &resp));
  EXPECT_EQ(TabletServerErrorPB::WRONG_SERVER_UUID, resp.error().code());

  const std::string text = server_->metrics()->ToPrometheusText();
  EXPECT_EQ(SeriesValue(text, "tserver_raft_leaderships_won_total"), 1) << text;
  EXPECT_EQ(SeriesValue(text, "tserver_raft_leaderships_lost_total"), 0);
  EXPECT_EQ(SeriesValue(text, "tserver_raft_term_changes_total"), 1);
  EXPECT_EQ(SeriesValue(text, "tserver_raft_leader_changes_total"), 1);
  EXPECT_EQ(SeriesValue(text, "tserver_leader_step_downs_total"), 0);
}

TEST_F(TabletServerTest, HeartbeatsRegisterAndReportTablets) {
  // The first beat registers and carries a full report.
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(10), [&] { ASSERT_GE(master_->beats().size(), 1u); });
  master::TSHeartbeatRequestPB first = master_->beats()[0];
  EXPECT_EQ(first.common().permanent_uuid(), server_->uuid());
  ASSERT_TRUE(first.has_registration());
  ASSERT_EQ(first.registration().rpc_addresses_size(), 1);
  EXPECT_EQ(first.registration().rpc_addresses(0).port(), server_->bound_rpc_addresses()[0].port());
  EXPECT_FALSE(first.tablet_report().is_incremental());

  // A new tablet shows up in an incremental report.
  ASSERT_NO_FATAL_FAILURE(CreateTablet("t1"));
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(10), [&] {
    bool seen = false;
    for (const auto& b : master_->beats()) {
      for (const auto& t : b.tablet_report().updated_tablets()) {
        seen |= b.tablet_report().is_incremental() && t.tablet_id() == "t1" &&
                t.state() == master::TABLET_RUNNING;
      }
    }
    ASSERT_TRUE(seen);
  });
  // Asked to re-register: registration and a full report again.
  const size_t before = master_->beats().size();
  master_->AskReregister();
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(10), [&] {
    auto beats = master_->beats();
    bool again = false;
    for (size_t i = before; i < beats.size(); i++) {
      again |= beats[i].has_registration() && !beats[i].tablet_report().is_incremental() &&
               beats[i].tablet_report().updated_tablets_size() == 1;
    }
    ASSERT_TRUE(again);
  });
  // A deleted tablet is reported removed.
  DeleteTabletRequestPB dreq;
  dreq.set_tablet_id("t1");
  DeleteTabletResponsePB dresp;
  ASSERT_OK(Call(*admin_, &TabletServerAdminServiceProxy::DeleteTablet, dreq, &dresp));
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(10), [&] {
    bool removed = false;
    for (const auto& b : master_->beats()) {
      for (const auto& id : b.tablet_report().removed_tablet_ids()) removed |= id == "t1";
    }
    ASSERT_TRUE(removed);
  });
}

// Each tablet's size and live row estimate reach the master with the reports: a
// tablet's figures are measured on their own (no heartbeat asks for them), and new
// rows make the tablet part of an incremental report with the new figures.
TEST_F(TabletServerTest, ReportsCarryTabletSizesAndRowEstimates) {
  const int32_t saved = FLAGS_update_tablet_stats_interval_ms;
  FLAGS_update_tablet_stats_interval_ms = 50;
  ASSERT_NO_FATAL_FAILURE(CreateTablet("t1"));
  auto last_stats = [&](master::ReportedTabletStatsPB* out) {
    bool found = false;
    for (const auto& b : master_->beats()) {
      for (const auto& t : b.tablet_report().updated_tablets()) {
        if (t.tablet_id() == "t1" && t.has_stats()) {
          *out = t.stats();
          found = true;
        }
      }
    }
    return found;
  };
  master::ReportedTabletStatsPB st;
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(10), [&] { ASSERT_TRUE(last_stats(&st)); });
  EXPECT_EQ(0, st.live_row_count());
  const int kRows = 25;
  WriteResponsePB wresp;
  ASSERT_OK(Call(*proxy_, &TabletServerServiceProxy::Write, MakeSeedWrite("t1", schema_, 0, kRows),
                 &wresp));
  ASSERT_FALSE(wresp.has_error()) << wresp.ShortDebugString();
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(10), [&] {
    ASSERT_TRUE(last_stats(&st));
    ASSERT_EQ(kRows, st.live_row_count());
    ASSERT_GT(st.on_disk_size(), 0);
  });
  FLAGS_update_tablet_stats_interval_ms = saved;
}

TEST_F(TabletServerTest, HeartbeatsRetryWhileTheMasterIsDown) {
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(10), [&] { ASSERT_GE(master_->beats().size(), 1u); });
  master_msgr_->Shutdown();
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(10),
                    [&] { ASSERT_GE(server_->heartbeater()->NumHeartbeatsFailedForTests(), 2); });
  // Serving goes on.
  ASSERT_NO_FATAL_FAILURE(CreateTablet("t1"));
  PingResponsePB presp;
  ASSERT_OK(Call(*proxy_, &TabletServerServiceProxy::Ping, PingRequestPB(), &presp));
}

}  // namespace
}  // namespace nyala::tserver
