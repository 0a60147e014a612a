// RequestTracker: exactly-once Write RPCs. A client that may retry a write puts a
// request id (client id, sequence number, lowest sequence number still in flight)
// in the RPC header. The tracker remembers the WriteResponsePB of each completed
// request, so a retry of a write that was applied is answered with the original
// response instead of being applied again (which would, e.g., turn a successful
// INSERT into ALREADY_PRESENT). A retry arriving while the original is still
// running waits for it and gets the same response.
//
// Durability: the tablet writes each applied request's response as a record in the
// same RocksDB WriteBatch as its rows (TabletStore, the requests column family), so
// the rows and their answer are acknowledged, and survive kill -9, together. At
// start-up the tablet manager reads the records back into the tracker (Restore), so
// a client retrying after a restart still gets its original answer. The in-memory
// map stays the only thing the write path consults: no RocksDB read per write.
//
// Memory and disk: a client's responses below its first_incomplete_seq_no are
// dropped as soon as it says so; a client silent for --write_dedup_ttl_ms is
// forgotten; a record older than that is not restored. Forgetting a stored response
// queues the deletion of its record, which rides along with the next write of its
// store (TabletStore::QueueRequestRecordDelete). Responses of requests that failed
// as a whole (nothing written) are neither kept nor stored: a retry runs again.
//
// Thread-safety: thread-safe. Responding to waiting duplicates happens outside the
// lock. The stores named in RequestRecordLocations must outlive every call that may
// forget their responses (the server stops its services before closing stores).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/mutex.h"
#include "nyala/monotime.h"
#include "rpc/rpc_header.pb.h"
#include "tserver/tserver.pb.h"

namespace nyala::rpc {
class RpcContext;
}

namespace nyala::tserver {

class TabletStore;

// Where a remembered response is also stored: the request's record under tablet
// `tablet_seq` in `store`. A null store: kept in memory only.
struct RequestRecordLocation {
  TabletStore* store = nullptr;
  uint64_t tablet_seq = 0;
};

class RequestTracker {
 public:
  enum class Outcome {
    kNew,       // run the request, then call Finish()
    kAnswered,  // `resp` holds the remembered response: respond with it
    kAttached,  // the same request is running; `ctx` will be answered by Finish()
    kStale,     // below the client's first incomplete number and forgotten: refuse
  };

  RequestTracker() = default;
  RequestTracker(const RequestTracker&) = delete;
  RequestTracker& operator=(const RequestTracker&) = delete;

  // Looks up `id`. For kAttached, `resp` and `ctx` must stay valid until Finish()
  // answers them (the RPC framework keeps them until the context responds).
  Outcome Begin(const rpc::RequestIdPB& id, WriteResponsePB* resp, rpc::RpcContext* ctx);
  // The request begun with kNew completed with `resp`. Answers attached duplicates
  // with a copy; remembers `resp` when `remember` (it was applied). `stored` says
  // where the tablet wrote `resp` as a record (with the rows), if it did; the
  // record is deleted when the tracker forgets the response.
  void Finish(const rpc::RequestIdPB& id, const WriteResponsePB& resp, bool remember,
              RequestRecordLocation stored = {});

  // At start-up (before the services run): remembers `resp` of request (client_id,
  // seq_no) read back from its record at `stored`, written `age` ago by a request
  // that carried `first_incomplete`. Returns false, and queues the record's
  // deletion, when it is not worth keeping (older than --write_dedup_ttl_ms, below
  // the client's first incomplete number, or a second record of the same request).
  bool Restore(std::string_view client_id, int64_t seq_no, int64_t first_incomplete,
               WriteResponsePB resp, MonoDelta age, RequestRecordLocation stored);

  // A replica applied request `id`, which its tablet's leader ran (this server, or
  // another one then): remembers `resp`, stored at `stored`, so a retry reaching this
  // server once it leads is answered. Nothing when the request is known here already
  // (this server is running it as the leader, or remembered it).
  void RememberApplied(const rpc::RequestIdPB& id, const WriteResponsePB& resp,
                       RequestRecordLocation stored);

  size_t NumClientsForTests() const;
  size_t NumResponsesForTests() const;

 private:
  struct Entry {
    bool done = false;
    WriteResponsePB resp;
    RequestRecordLocation stored;
    std::vector<std::pair<WriteResponsePB*, rpc::RpcContext*>> waiters;
  };
  struct Client {
    int64_t first_incomplete = 0;
    MonoTime last_access;
    std::map<int64_t, Entry> entries;
  };
  // Raises the client's first incomplete number to `first_incomplete` and forgets
  // its completed responses below it.
  void AdvanceFirstIncompleteLocked(const std::string& client_id, Client* c,
                                    int64_t first_incomplete) REQUIRES(mu_);
  // Queues the deletion of `e`'s record, if it has one.
  void DeleteRecordLocked(std::string_view client_id, int64_t seq_no, const Entry& e) REQUIRES(mu_);
  void SweepLocked(MonoTime now) REQUIRES(mu_);

  mutable Mutex mu_;
  std::unordered_map<std::string, Client> clients_ GUARDED_BY(mu_);
  MonoTime last_sweep_ GUARDED_BY(mu_);
};

}  // namespace nyala::tserver
