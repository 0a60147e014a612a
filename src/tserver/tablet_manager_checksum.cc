// TabletManager::Checksum: a replica's rows checksummed at one applied index, for
// `nyala cluster ksck --checksum_scan`.
#include <glog/logging.h>

#include <future>

#include "common/crc32c.h"
#include "tserver/tablet_manager.h"
#include "tserver/tablet_replica.h"
#include "tserver/tablet_store.h"

namespace nyala::tserver {

namespace {

// A row's 64-bit hash: the CRC-32C of its key and of its value, side by side.
uint64_t RowHash(Slice key, Slice value) {
  const uint32_t k = Crc32c(0, key.data(), key.size());
  const uint32_t v = Crc32c(k, value.data(), value.size());
  return (uint64_t(k) << 32) | v;
}

}  // namespace

void TabletManager::Checksum(const std::string& tablet_id, uint64_t at_index, MonoDelta timeout,
                             ChecksumTabletResponsePB* resp) {
  auto fail = [&](TabletServerErrorPB::Code code, const Status& s) {
    SetError(code, s, resp->mutable_error());
  };
  std::shared_ptr<Tablet> t = Lookup(tablet_id);
  if (!t) return fail(TabletServerErrorPB::TABLET_NOT_FOUND, Status::NotFound("no tablet " + tablet_id));
  if (t->state() != TabletState::kRunning || !t->replica().group()) {
    return fail(TabletServerErrorPB::TABLET_NOT_RUNNING,
                Status::ServiceUnavailable("tablet " + tablet_id + " is not running"));
  }
  // The snapshot is taken on the group's worker right after the entry's apply.
  struct Point {
    bool at = false;
    std::unique_ptr<StoreSnapshot> snapshot;
    std::shared_ptr<const TabletSchema> schema;
    uint64_t index = 0;
  };
  auto point = std::make_shared<Point>();
  auto taken = std::make_shared<std::promise<void>>();
  std::future<void> done = taken->get_future();
  TabletStore* store = t->store();
  TabletReplica* replica = &t->replica();
  // Weak: a function the group never runs (it stopped first) must not keep the tablet,
  // which owns the group's replica, alive.
  const bool posted = replica->RunAtIndex(at_index, [point, taken, store, replica,
                                                     weak = std::weak_ptr<Tablet>(t)](bool at) {
    point->at = at;
    if (at) {
      if (std::shared_ptr<Tablet> tablet = weak.lock()) point->schema = tablet->tablet_schema();
      point->snapshot = store->GetSnapshot();
      point->index = replica->applied_index();
    }
    taken->set_value();
  });
  if (!posted) {
    return fail(TabletServerErrorPB::TABLET_NOT_RUNNING,
                Status::ServiceUnavailable("tablet " + tablet_id + ": its group stopped"));
  }
  if (done.wait_for(std::chrono::microseconds(timeout.ToMicroseconds())) !=
      std::future_status::ready) {
    return fail(TabletServerErrorPB::REPLICA_TOO_STALE,
                Status::TimedOut("tablet " + tablet_id + ": the replica did not apply index " +
                                     std::to_string(at_index) + " within " + timeout.ToString(),
                                 "its applied index is " +
                                     std::to_string(replica->applied_index())));
  }
  if (!point->at) {
    return fail(TabletServerErrorPB::REPLICA_TOO_STALE,
                Status::IllegalState("tablet " + tablet_id + ": the replica applied past index " +
                                         std::to_string(at_index) + " first",
                                     "ask again with a later index"));
  }
  uint64_t sum = 0;
  int64_t rows = 0;
  std::unique_ptr<StoreIterator> it = t->NewIterator(point->snapshot.get(), KeyRange());
  std::string rewritten;
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    Slice key = it->key();
    key.remove_prefix(kTabletPrefixSize);  // the prefix is the store's, not the row's
    // A value of an earlier schema version hashes as it reads now: compactions rewrite
    // such values on each replica at its own pace.
    Slice value = it->value();
    if (point->schema && point->schema->RewriteToCurrent(value, &rewritten)) value = rewritten;
    sum += RowHash(key, value);
    rows++;
  }
  if (Status s = it->status(); !s.ok()) {
    return fail(TabletServerErrorPB::UNKNOWN_ERROR, s.CloneAndPrepend("tablet " + tablet_id));
  }
  resp->set_applied_index(point->index);
  resp->set_checksum(sum);
  resp->set_rows(rows);
}

}  // namespace nyala::tserver
