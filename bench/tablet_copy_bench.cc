// tablet-copy-bench: how fast a tablet copy moves a tablet, next to a plain file copy
// of the same SST files, measured in the same run.
//
// A source server (a TabletManager with its consensus runtime, the tablet a Raft group
// of one) holds one tablet of about --tablet_mb of rows (incompressible values of
// --value_bytes). Each round, alternately:
//   tablet copy  a receiver begins a copy session over loopback RPC (the source exports
//                the tablet: a flush, hard links, CRC-32C of each file), downloads every
//                file in checked chunks (each file fdatasync'ed) and installs it
//                (TabletManager::InstallCopy: RocksDB's CreateColumnFamilyWithImport,
//                the log reset); the tablet is then deleted on the receiver again;
//   file copy    the same SST files (an export of the tablet) read and written to
//                another directory of the same disk with fdatasync, as cp would plus
//                the sync the copy does.
// It prints each round and the medians: bytes/s of each, and their ratio.
#include <fcntl.h>
#include <gflags/gflags.h>
#include <glog/logging.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "bench_util.h"
#include "common/row_operations.h"
#include "common/status.h"
#include "nyala/monotime.h"
#include "nyala/row.h"
#include "rpc/messenger.h"
#include "tserver/tablet.h"
#include "tserver/tablet_copy_client.h"
#include "tserver/tablet_copy_service.h"
#include "tserver/tablet_copy_source.h"
#include "tserver/tablet_manager.h"
#include "tserver/tablet_manager_test_util.h"
#include "tserver/tablet_metadata.pb.h"
#include "tserver/tserver_test_util.h"

DEFINE_int64(tablet_mb, 1024, "Size of the tablet's rows, in MiB (keys and values).");
DEFINE_int32(value_bytes, 1000, "Bytes of the (random, incompressible) value of each row.");
DEFINE_int32(batch_rows, 1000, "Rows per write while loading the tablet.");
DEFINE_int32(rounds, 3, "Rounds of (tablet copy, file copy); medians are printed.");
DEFINE_string(bench_dir, "", "Directory for the servers (default: a new one under /tmp, removed).");

namespace nyala::tserver {
namespace {

using testing::MakeCreateTablet;
using testing::TestTabletManager;

constexpr char kTablet[] = "copied-tablet";

Schema BenchSchema() {
  auto s = Schema::Create({ColumnSchema("key", DataType::kInt64),
                           ColumnSchema("payload", DataType::kBinary)},
                          1);
  CHECK_OK(s.status());
  return std::move(s).value();
}

void Load(TabletManager* tablets, const Schema& schema) {
  TabletServerErrorPB::Code code;
  CHECK_OK(tablets->CreateTablet(MakeCreateTablet(kTablet, schema), &code));
  std::shared_ptr<Tablet> t = tablets->Lookup(kTablet);
  const int64_t rows = (FLAGS_tablet_mb << 20) / (FLAGS_value_bytes + 8);
  std::mt19937_64 rng(42);
  std::string payload(size_t(FLAGS_value_bytes), '\0');
  Row row(&schema);
  const MonoTime start = MonoTime::Now();
  for (int64_t first = 0; first < rows; first += FLAGS_batch_rows) {
    WriteRequestPB req;
    req.set_tablet_id(kTablet);
    schema.ToPB(req.mutable_schema());
    RowOperationsEncoder enc(&schema);
    for (int64_t k = first; k < std::min(rows, first + FLAGS_batch_rows); k++) {
      for (size_t i = 0; i < payload.size(); i += 8) {
        const uint64_t r = rng();
        memcpy(&payload[i], &r, std::min<size_t>(8, payload.size() - i));
      }
      CHECK_OK(row.Set(0, Cell::Int64(k)));
      CHECK_OK(row.Set(1, Cell::Binary(payload)));
      CHECK_OK(enc.Add(RowOpType::kInsert, row.view()));
    }
    enc.Finish(req.mutable_row_operations());
    WriteResponsePB resp;
    t->Write(req, &resp);
    CHECK(!resp.has_error()) << resp.ShortDebugString();
  }
  printf("loaded %ld rows of %d-byte values in %.1f s\n", long(rows), FLAGS_value_bytes,
         (MonoTime::Now() - start).ToSeconds());
}

int64_t DirBytes(const std::string& dir) {
  int64_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.is_regular_file()) n += int64_t(e.file_size());
  }
  return n;
}

// Copies every .sst file of `from` into the new directory `to` (read, write,
// fdatasync), the way the copy writes its files.
void PlainCopy(const std::string& from, const std::string& to) {
  std::filesystem::create_directories(to);
  std::vector<char> buf(1 << 20);
  for (const auto& e : std::filesystem::directory_iterator(from)) {
    if (e.path().extension() != ".sst") continue;
    int in = open(e.path().c_str(), O_RDONLY);
    PCHECK(in >= 0);
    const std::string dst = to + "/" + e.path().filename().string();
    int out = open(dst.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    PCHECK(out >= 0);
    for (;;) {
      ssize_t n = read(in, buf.data(), buf.size());
      PCHECK(n >= 0);
      if (n == 0) break;
      PCHECK(write(out, buf.data(), size_t(n)) == n);
    }
    PCHECK(fdatasync(out) == 0);
    close(in);
    close(out);
  }
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int Main() {
  std::string root = FLAGS_bench_dir;
  const bool remove_root = root.empty();
  if (root.empty()) {
    char tmpl[] = "/tmp/tablet-copy-bench-XXXXXX";
    CHECK(mkdtemp(tmpl) != nullptr);
    root = tmpl;
  }
  std::filesystem::create_directories(root + "/src");
  std::filesystem::create_directories(root + "/dst");
  const Schema schema = BenchSchema();

  TestTabletManager::Options so;
  so.data_dir = root + "/src";
  auto source = TestTabletManager::Start(std::move(so));
  CHECK_OK(source.status());
  Load((*source)->manager(), schema);
  TabletManager* src = (*source)->manager();

  // The source's copy service on loopback.
  rpc::MessengerOptions mo;
  mo.name = "copy-source";
  auto server = rpc::Messenger::Create(mo);
  CHECK_OK(server.status());
  auto sessions = TabletCopySourceManager::Create(
      root + "/src/copy-sessions",
      [src](const std::string& id, const std::string& dir, TabletCopySnapshot* out) {
        return src->ExportForCopy(id, dir, &out->files, &out->superblock);
      });
  CHECK_OK(sessions.status());
  CHECK_OK((*server)->RegisterService(std::make_unique<TabletCopyServiceImpl>(sessions->get())));
  rpc::Sockaddr addr;
  CHECK_OK((*server)->AddListener(rpc::Sockaddr::Loopback(0), &addr));

  TestTabletManager::Options ro;
  ro.data_dir = root + "/dst";
  ro.uuid = "00000000000000000000000000000002";
  auto receiver = TestTabletManager::Start(std::move(ro));
  CHECK_OK(receiver.status());
  rpc::MessengerOptions co;
  co.name = "copy-client";
  auto client = rpc::Messenger::Create(co);
  CHECK_OK(client.status());

  std::vector<double> copy_rates, file_rates;
  for (int round = 0; round < FLAGS_rounds; round++) {
    // Tablet copy: session (export), download, install.
    const std::string staging = root + "/dst/staging";
    TabletCopyClientOptions opts;
    opts.deadline = MonoTime::Now() + MonoDelta::FromSeconds(3600);
    TabletCopyProgress progress;
    TabletCopyDownload download;
    const MonoTime t0 = MonoTime::Now();
    CHECK_OK(DownloadTabletCopy(*client, addr, kTablet, "bench-receiver", staging, opts,
                                &progress, &download));
    const MonoTime t1 = MonoTime::Now();
    auto index = (*receiver)->manager()->InstallCopy(kTablet, staging, download.superblock,
                                                     (*receiver)->tracker());
    CHECK_OK(index.status());
    const MonoTime t2 = MonoTime::Now();
    const int64_t bytes = progress.bytes_done.load();
    const double copy_secs = (t2 - t0).ToSeconds();
    copy_rates.push_back(double(bytes) / copy_secs);
    printf("round %d tablet copy: %.1f MiB in %.2f s (session and download %.2f s, install "
           "%.2f s): %.1f MiB/s\n",
           round, double(bytes) / (1 << 20), copy_secs, (t1 - t0).ToSeconds(),
           (t2 - t1).ToSeconds(), double(bytes) / (1 << 20) / copy_secs);
    CHECK_OK((*receiver)->manager()->DeleteTablet(kTablet));
    std::filesystem::remove_all(staging);

    // File copy of the same SST files (an export of the tablet, outside the timing).
    const std::string exported = root + "/src/plain-export";
    std::vector<std::string> files;
    std::string superblock;
    CHECK_OK(src->ExportForCopy(kTablet, exported, &files, &superblock));
    const std::string to = root + "/dst/plain-copy";
    const MonoTime p0 = MonoTime::Now();
    PlainCopy(exported, to);
    const double plain_secs = (MonoTime::Now() - p0).ToSeconds();
    const int64_t plain_bytes = DirBytes(to);
    file_rates.push_back(double(plain_bytes) / plain_secs);
    printf("round %d file copy:   %.1f MiB in %.2f s: %.1f MiB/s\n", round,
           double(plain_bytes) / (1 << 20), plain_secs,
           double(plain_bytes) / (1 << 20) / plain_secs);
    std::filesystem::remove_all(exported);
    std::filesystem::remove_all(to);
  }
  const double c = Median(copy_rates), f = Median(file_rates);
  printf("median tablet copy %.1f MiB/s, file copy %.1f MiB/s: tablet copy at %.0f%% of the "
         "file copy\n",
         c / (1 << 20), f / (1 << 20), 100 * c / f);
  (*client)->Shutdown();
  (*server)->Shutdown();
  (*sessions)->Shutdown();
  receiver->reset();
  source->reset();
  if (remove_root) std::filesystem::remove_all(root);
  return 0;
}

}  // namespace
}  // namespace nyala::tserver

int main(int argc, char** argv) {
  gflags::SetUsageMessage(
      "Tablet copy rate (export, download over loopback, install) against a plain file copy "
      "of the same SST files, in one run.");
  // The copy's own rate, unthrottled unless asked (the servers' default limits it).
  gflags::SetCommandLineOptionWithMode("tablet_copy_rate_limit_mb", "0", gflags::SET_FLAGS_DEFAULT);
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  google::InitGoogleLogging(argv[0]);
  return nyala::tserver::Main();
}
