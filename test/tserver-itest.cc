// Integration test of the real nyala-tserver process (no master: heartbeats go to a
// closed port and keep failing): create a tablet through the admin service, write
// 100,000 rows with Write RPCs, read them back by Get and by Scan with predicates,
// feed it bad input (each a specific error, nothing written, still serving), kill
// it with SIGKILL while writes are in flight, restart it and find every
// acknowledged row; retry a write with its request id after a SIGKILL and get the
// original answer; a second process on the same data dir is refused.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "common/coding.h"
#include "common/row_block.h"
#include "common/test_util.h"
#include "common/wire_protocol.h"
#include "nyala/predicate.h"
#include "rpc/messenger.h"
#include "rpc/rpc_controller.h"
#include "test/external_daemon.h"
#include "tserver/tserver.proxy.h"
#include "tserver/tserver_admin.proxy.h"
#include "tserver/tserver_test_util.h"

namespace nyala::test {
namespace {

using namespace nyala::tserver;           // NOLINT(build/namespaces)
using namespace nyala::tserver::testing;  // NOLINT(build/namespaces)

constexpr int64_t kRows = 100000;
constexpr int kBatch = 1000;

class TServerITest : public NyalaTest {
 protected:
  void SetUp() override {
    NyalaTest::SetUp();
    schema_ = SeedSchema();
    ExternalDaemonOptions o;
    o.binary = BinDir() + "/nyala-tserver";
    o.name = "ts";
    o.root_dir = test_dir();
    o.flags = {"--tserver_master_addrs=127.0.0.1:1", "--heartbeat_interval_ms=200",
               "--num_reactor_threads=1"};
    ts_ = std::make_unique<ExternalDaemon>(o);
    ASSERT_OK(ts_->Start());
    rpc::MessengerOptions mo;
    mo.name = "itest-client";
    mo.num_reactors = 1;
    auto m = rpc::Messenger::Create(mo);
    ASSERT_OK(m.status());
    client_ = *m;
  }
  void TearDown() override {
    if (client_) client_->Shutdown();
    if (ts_) EXPECT_OK(ts_->Shutdown());
    ts_.reset();
    NyalaTest::TearDown();
  }
  // Calls `method` of a proxy of the tablet server (e.g. &TabletServerServiceProxy::Write)
  // with a 30 s timeout.
  template <typename P, typename Req, typename Resp>
  Status Call(Status (P::*method)(const Req&, Resp*, rpc::RpcController*) const,
              const std::type_identity_t<Req>& req, Resp* resp, rpc::RpcController* rpc = nullptr) {
    rpc::RpcController local;
    if (!rpc) rpc = &local;
    rpc->set_timeout(MonoDelta::FromSeconds(30));
    P proxy(client_, ts_->rpc_addr());
    return (proxy.*method)(req, resp, rpc);
  }
  void Write(const WriteRequestPB& req, WriteResponsePB* resp) {
    ASSERT_OK(Call(&TabletServerServiceProxy::Write, req, resp));
  }

  // Gets keys [first, first + n) in 100-key calls; returns how many were found, each
  // checked against its seed row.
  int64_t CountByGet(int64_t first, int64_t n) {
    int64_t found = 0;
    for (int64_t k = first; k < first + n; k += 100) {
      GetRequestPB req;
      req.set_tablet_id("tablet-1");
      const int64_t m = std::min<int64_t>(100, first + n - k);
      for (int64_t i = 0; i < m; i++) req.add_keys(EncodedKey(schema_, k + i));
      GetResponsePB resp;
      rpc::RpcController rpc;
      EXPECT_OK(Call(&TabletServerServiceProxy::Get, req, &resp, &rpc));
      EXPECT_FALSE(resp.has_error()) << resp.ShortDebugString();
      Slice rows, indirect;
      EXPECT_OK(rpc.GetInboundSidecar(resp.data().rows_sidecar(), &rows));
      EXPECT_OK(rpc.GetInboundSidecar(resp.data().indirect_data_sidecar(), &indirect));
      RowBlock block;
      EXPECT_OK(RowBlock::Parse(&schema_, resp.data().num_rows(), rows, indirect, &block));
      std::vector<Cell> cells(schema_.num_columns());
      int row = 0;
      for (int64_t i = 0; i < m; i++) {
        if (!resp.found(static_cast<int>(i))) continue;
        block.GetRow(row++, cells.data());
        EXPECT_TRUE(MatchesSeedRow(cells.data(), k + i)) << k + i;
        found++;
      }
    }
    return found;
  }

  // Scans with `ns` to the end; returns the keys.
  std::vector<int64_t> Scan(NewScanRequestPB ns, uint32_t batch_bytes = 0) {
    std::vector<int64_t> keys;
    ScanRequestPB req;
    *req.mutable_new_scan_request() = std::move(ns);
    req.mutable_new_scan_request()->set_tablet_id("tablet-1");
    req.mutable_new_scan_request()->add_projected_columns("key");
    req.set_batch_size_bytes(batch_bytes);
    auto proj = schema_.Project({"key"});
    for (uint32_t seq = 1; seq < 100000; seq++) {
      ScanResponsePB resp;
      rpc::RpcController rpc;
      EXPECT_OK(Call(&TabletServerServiceProxy::Scan, req, &resp, &rpc));
      EXPECT_FALSE(resp.has_error()) << resp.ShortDebugString();
      if (resp.has_error()) break;
      Slice rows, indirect;
      EXPECT_OK(rpc.GetInboundSidecar(resp.data().rows_sidecar(), &rows));
      EXPECT_OK(rpc.GetInboundSidecar(resp.data().indirect_data_sidecar(), &indirect));
      RowBlock block;
      EXPECT_OK(RowBlock::Parse(&*proj, resp.data().num_rows(), rows, indirect, &block));
      for (int64_t r = 0; r < block.num_rows(); r++) keys.push_back(block.cell(r, 0).int_value());
      if (!resp.has_more_results()) break;
      req.Clear();
      req.set_scanner_id(resp.scanner_id());
      req.set_call_seq_id(seq);
      req.set_batch_size_bytes(batch_bytes);
    }
    return keys;
  }

  Schema schema_;
  std::unique_ptr<ExternalDaemon> ts_;
  std::shared_ptr<rpc::Messenger> client_;
};

TEST_F(TServerITest, WriteReadKillRestart) {
  CreateTabletResponsePB cresp;
  ASSERT_OK(Call(&TabletServerAdminServiceProxy::CreateTablet,
                 MakeCreateTablet("tablet-1", schema_), &cresp));
  ASSERT_FALSE(cresp.has_error()) << cresp.ShortDebugString();

  // 100,000 rows in 1,000-row Write RPCs.
  for (int64_t k = 0; k < kRows; k += kBatch) {
    WriteResponsePB resp;
    ASSERT_NO_FATAL_FAILURE(Write(MakeSeedWrite("tablet-1", schema_, k, kBatch), &resp));
    ASSERT_FALSE(resp.has_error()) << resp.ShortDebugString();
    ASSERT_EQ(resp.rows_applied(), kBatch);
  }
  // Back by Get (plus keys that do not exist).
  EXPECT_EQ(CountByGet(0, kRows + 500), kRows);
  // Back by Scan: everything, then with predicates, against the same filter in memory.
  std::vector<int64_t> all = Scan(NewScanRequestPB());
  ASSERT_EQ(all.size(), static_cast<size_t>(kRows));
  for (int64_t i = 0; i < kRows; i++) ASSERT_EQ(all[i], i);
  NewScanRequestPB ns;
  auto* range = ns.add_predicates();
  range->set_column("key");
  range->mutable_range()->set_lower(EncodeCellValue(Cell::Int64(20000)));
  range->mutable_range()->set_lower_inclusive(true);
  range->mutable_range()->set_upper(EncodeCellValue(Cell::Int64(60000)));
  ns.add_predicates()->set_column("c");
  ns.mutable_predicates(1)->mutable_is_null();
  auto* in = ns.add_predicates();
  in->set_column("d");
  for (int v : {3, 25, 58}) in->mutable_in_list()->add_values(EncodeCellValue(Cell::Int32(v)));
  std::vector<int64_t> want;
  for (int64_t k = 20000; k < 60000; k++) {
    SeedRow r = MakeSeedRow(k);
    if (r.c_null && !r.d_null && (r.d == 3 || r.d == 25 || r.d == 58)) want.push_back(k);
  }
  ASSERT_FALSE(want.empty());
  EXPECT_EQ(Scan(ns, 512), want);

  // Writes in flight when the process is killed: every acknowledged row survives.
  std::atomic<int64_t> acked_end{kRows};
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (int64_t k = kRows; !stop && k < 10 * kRows; k += 100) {
      WriteResponsePB resp;
      if (!Call(&TabletServerServiceProxy::Write, MakeSeedWrite("tablet-1", schema_, k, 100), &resp)
               .ok())
        break;
      if (resp.has_error() || resp.rows_applied() != 100) break;
      acked_end = k + 100;
    }
  });
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(60), [&] { ASSERT_GE(acked_end.load(), kRows + 2000); });
  ts_->Kill(SIGKILL);
  stop = true;
  writer.join();
  const int64_t acked = acked_end.load();
  ASSERT_OK(ts_->Restart());
  EXPECT_EQ(CountByGet(0, acked), acked);
  std::vector<int64_t> after = Scan(NewScanRequestPB());
  ASSERT_GE(after.size(), static_cast<size_t>(acked));
  for (int64_t i = 0; i < acked; i++) ASSERT_EQ(after[i], i);

  // A clean shutdown exits 0 and keeps everything too.
  ASSERT_OK(ts_->Shutdown());
  ASSERT_OK(ts_->Start());
  EXPECT_EQ(CountByGet(acked - 1000, 1000), 1000);
}

TEST_F(TServerITest, BadInputGetsSpecificErrorsAndNothingIsWritten) {
  CreateTabletResponsePB cresp;
  ASSERT_OK(Call(&TabletServerAdminServiceProxy::CreateTablet,
                 MakeCreateTablet("tablet-1", schema_), &cresp));
  ASSERT_FALSE(cresp.has_error());
  WriteResponsePB resp;
  ASSERT_NO_FATAL_FAILURE(Write(MakeSeedWrite("tablet-1", schema_, 0, 3000), &resp));
  ASSERT_EQ(resp.rows_applied(), 3000);
  // After each bad request: a good one works, and the bad rows are absent.
  int64_t next_good = 10000;
  auto still_serving = [&] {
    WriteResponsePB r;
    ASSERT_NO_FATAL_FAILURE(Write(MakeSeedWrite("tablet-1", schema_, next_good, 1), &r));
    ASSERT_EQ(r.rows_applied(), 1);
    next_good++;
  };
  auto nothing_written = [&](int64_t first, int64_t n) { EXPECT_EQ(CountByGet(first, n), 0); };

  // 1. A truncated value.
  WriteRequestPB req = MakeSeedWrite("tablet-1", schema_, 5000, 10);
  req.mutable_row_operations()->mutable_rows()->resize(req.row_operations().rows().size() - 2);
  ASSERT_NO_FATAL_FAILURE(Write(req, &resp));
  EXPECT_EQ(resp.error().code(), TabletServerErrorPB::INVALID_ROW_BLOCK);
  nothing_written(5000, 10);
  still_serving();

  // 2. A wrong column type: the request's schema says `a` is STRING.
  req = MakeSeedWrite("tablet-1", schema_, 5100, 10);
  req.mutable_schema()->mutable_columns(1)->set_type(nyala::STRING);
  resp.Clear();
  ASSERT_NO_FATAL_FAILURE(Write(req, &resp));
  EXPECT_EQ(resp.error().code(), TabletServerErrorPB::MISMATCHED_SCHEMA);
  nothing_written(5100, 10);
  still_serving();

  // 3. A key column missing: a row error for that row, nothing applied.
  req = MakeSeedWrite("tablet-1", schema_, 5200, 1);
  {
    std::string rows;
    PutVarint64(&rows, 5);
    PutVarint64(&rows, 1);
    rows.push_back(static_cast<char>(RowOpType::kInsert));
    rows.push_back(0x02);  // only column a set
    rows.push_back(0x00);
    PutFixedLE<int32_t>(&rows, 7);
    req.mutable_row_operations()->set_rows(rows);
    req.mutable_row_operations()->clear_indirect_data();
  }
  resp.Clear();
  ASSERT_NO_FATAL_FAILURE(Write(req, &resp));
  EXPECT_FALSE(resp.has_error());
  ASSERT_EQ(resp.per_row_errors_size(), 1);
  EXPECT_EQ(resp.per_row_errors(0).row_index(), 0);
  EXPECT_TRUE(StatusFromPB(resp.per_row_errors(0).error()).IsInvalidArgument());
  EXPECT_EQ(resp.rows_applied(), 0);
  still_serving();

  // 4. A string longer than the frame: its length runs past the indirect data.
  req = MakeSeedWrite("tablet-1", schema_, 5300, 1);
  {
    // Rewrite the last string's length varint to claim 1 GiB.
    std::string rows = req.row_operations().rows();
    Slice in(rows);
    uint64_t n, nrows;
    ASSERT_TRUE(GetVarint64(&in, &n) && GetVarint64(&in, &nrows));
    const size_t header = rows.size() - in.size();
    // row: op, isset, null, key(8), a(4), b(off,len), c(off,len), d(4)
    std::string row = rows.substr(header);
    Slice p(row);
    p.remove_prefix(3 + 8 + 4);
    uint64_t off, len;
    ASSERT_TRUE(GetVarint64(&p, &off) && GetVarint64(&p, &len));
    const size_t b_len_pos = row.size() - p.size();
    std::string patched = rows.substr(0, header) + row.substr(0, b_len_pos);
    PutVarint64(&patched, off);
    PutVarint64(&patched, uint64_t{1} << 30);
    patched += row.substr(b_len_pos + VarintLength(off) + VarintLength(len));
    req.mutable_row_operations()->set_rows(patched);
  }
  resp.Clear();
  ASSERT_NO_FATAL_FAILURE(Write(req, &resp));
  EXPECT_EQ(resp.error().code(), TabletServerErrorPB::INVALID_ROW_BLOCK) << resp.ShortDebugString();
  nothing_written(5300, 1);
  still_serving();

  // 5. An unknown tablet.
  resp.Clear();
  ASSERT_NO_FATAL_FAILURE(Write(MakeSeedWrite("no-such-tablet", schema_, 5400, 1), &resp));
  EXPECT_EQ(resp.error().code(), TabletServerErrorPB::TABLET_NOT_FOUND);
  GetRequestPB greq;
  greq.set_tablet_id("no-such-tablet");
  greq.add_keys(EncodedKey(schema_, 1));
  GetResponsePB gresp;
  ASSERT_OK(Call(&TabletServerServiceProxy::Get, greq, &gresp));
  EXPECT_EQ(gresp.error().code(), TabletServerErrorPB::TABLET_NOT_FOUND);
  still_serving();

  // 6. A scanner id that never existed.
  ScanRequestPB sreq;
  sreq.set_scanner_id("never-existed");
  sreq.set_call_seq_id(1);
  ScanResponsePB sresp;
  ASSERT_OK(Call(&TabletServerServiceProxy::Scan, sreq, &sresp));
  EXPECT_EQ(sresp.error().code(), TabletServerErrorPB::SCANNER_EXPIRED);
  still_serving();

  // 7. A stale call_seq_id.
  sreq.Clear();
  sreq.mutable_new_scan_request()->set_tablet_id("tablet-1");
  sreq.set_batch_size_bytes(1024);
  sresp.Clear();
  ASSERT_OK(Call(&TabletServerServiceProxy::Scan, sreq, &sresp));
  ASSERT_TRUE(sresp.has_more_results());
  const std::string id = sresp.scanner_id();
  for (uint32_t seq : {1u, 2u}) {
    sreq.Clear();
    sreq.set_scanner_id(id);
    sreq.set_call_seq_id(seq);
    sreq.set_batch_size_bytes(1024);
    sresp.Clear();
    ASSERT_OK(Call(&TabletServerServiceProxy::Scan, sreq, &sresp));
    ASSERT_FALSE(sresp.has_error());
  }
  sreq.set_call_seq_id(1);
  sresp.Clear();
  ASSERT_OK(Call(&TabletServerServiceProxy::Scan, sreq, &sresp));
  EXPECT_EQ(sresp.error().code(), TabletServerErrorPB::INVALID_SCAN_CALL_SEQ_ID);
  still_serving();

  // Nothing beyond the good rows was written.
  EXPECT_EQ(Scan(NewScanRequestPB()).size(), static_cast<size_t>(3000 + next_good - 10000));
  EXPECT_TRUE(ts_->IsRunning());
}

TEST_F(TServerITest, RetryAfterKillGetsTheOriginalAnswer) {
  CreateTabletResponsePB cresp;
  ASSERT_OK(Call(&TabletServerAdminServiceProxy::CreateTablet,
                 MakeCreateTablet("tablet-1", schema_), &cresp));
  ASSERT_FALSE(cresp.has_error()) << cresp.ShortDebugString();
  auto write_with_id = [&](int64_t seq, int64_t first_incomplete, const WriteRequestPB& req,
                           WriteResponsePB* resp) {
    rpc::RequestIdPB id;
    id.set_client_id("itest-client");
    id.set_seq_no(seq);
    id.set_first_incomplete_seq_no(first_incomplete);
    rpc::RpcController rpc;
    rpc.set_request_id(std::move(id));
    return Call(&TabletServerServiceProxy::Write, req, resp, &rpc);
  };
  // Applied and in the WAL; then the process dies, as if before the client got the
  // answer.
  const WriteRequestPB req = MakeSeedWrite("tablet-1", schema_, 0, 100);
  WriteResponsePB first;
  ASSERT_OK(write_with_id(1, 1, req, &first));
  ASSERT_FALSE(first.has_error()) << first.ShortDebugString();
  ASSERT_EQ(first.rows_applied(), 100);
  ts_->Kill(SIGKILL);
  ASSERT_OK(ts_->Restart());

  // The retry gets the original success, not ALREADY_PRESENT, and writes nothing. (Until
  // the restarted replica leads and applied its log, it answers NOT_THE_LEADER, which a
  // client retries.)
  WriteResponsePB retry;
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(30), [&] {
    retry.Clear();
    ASSERT_OK(write_with_id(1, 1, req, &retry));
    ASSERT_NE(retry.error().code(), TabletServerErrorPB::NOT_THE_LEADER) << retry.ShortDebugString();
  });
  EXPECT_FALSE(retry.has_error()) << retry.ShortDebugString();
  EXPECT_EQ(retry.per_row_errors_size(), 0) << retry.ShortDebugString();
  EXPECT_EQ(retry.rows_applied(), 100);
  std::vector<int64_t> keys = Scan(NewScanRequestPB());
  ASSERT_EQ(keys.size(), 100u);
  for (int64_t i = 0; i < 100; i++) ASSERT_EQ(keys[i], i);
  // Without the request id the same block is applied again: every row a duplicate.
  WriteResponsePB plain;
  ASSERT_NO_FATAL_FAILURE(Write(req, &plain));
  EXPECT_EQ(plain.per_row_errors_size(), 100);

  // The client moves on; after another SIGKILL request 2 is still answered, and a
  // late retry of request 1, whose answer the client has, is refused.
  WriteResponsePB second;
  ASSERT_OK(write_with_id(2, 2, MakeSeedWrite("tablet-1", schema_, 100, 10), &second));
  ASSERT_EQ(second.rows_applied(), 10);
  ts_->Kill(SIGKILL);
  ASSERT_OK(ts_->Restart());
  retry.Clear();
  ASSERT_OK(write_with_id(2, 2, MakeSeedWrite("tablet-1", schema_, 100, 10), &retry));
  EXPECT_EQ(retry.per_row_errors_size(), 0) << retry.ShortDebugString();
  EXPECT_EQ(retry.rows_applied(), 10);
  EXPECT_FALSE(write_with_id(1, 1, req, &retry).ok());
  // Both retries were answered from the request records, without the tablet's leader:
  // the restarted replica may still be applying its election's entry (NOT_THE_LEADER,
  // as a client would retry).
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(10),
                    [&] { EXPECT_EQ(Scan(NewScanRequestPB()).size(), 110u); });
}

TEST_F(TServerITest, SecondProcessOnTheSameDataDirIsRefused) {
  ExternalDaemonOptions o;
  o.binary = BinDir() + "/nyala-tserver";
  o.name = "ts2";
  o.root_dir = test_dir();
  o.flags = {"--fs_data_dirs=" + ts_->data_dir(), "--tserver_master_addrs=127.0.0.1:1"};
  o.start_timeout = MonoDelta::FromSeconds(20);
  ExternalDaemon second(o);
  Status s = second.Start();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("already running"), std::string::npos) << s.ToString();
  EXPECT_TRUE(ts_->IsRunning());
}

// A daemon dies with the thread that started it (PR_SET_PDEATHSIG), so a test that
// crashes leaves no tablet server behind. Here the starting thread exits at once.
TEST_F(TServerITest, DaemonDiesWithTheThreadThatStartedIt) {
  ExternalDaemonOptions o;
  o.binary = BinDir() + "/nyala-tserver";
  o.name = "orphan";
  o.root_dir = test_dir();
  o.flags = {"--tserver_master_addrs=127.0.0.1:1"};
  ExternalDaemon orphan(o);
  Status started;
  std::thread([&] { started = orphan.Start(); }).join();
  ASSERT_OK(started);
  const MonoTime give_up = MonoTime::Now() + MonoDelta::FromSeconds(10);
  while (orphan.IsRunning() && MonoTime::Now() < give_up) SleepFor(MonoDelta::FromMilliseconds(5));
  EXPECT_FALSE(orphan.IsRunning()) << "the daemon outlived the thread that started it";
  EXPECT_TRUE(ts_->IsRunning());
}

}  // namespace
}  // namespace nyala::test
