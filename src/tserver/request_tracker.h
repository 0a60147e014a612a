// RequestTracker: exactly-once Write RPCs. A client that may retry a write puts a
// request id (client id, sequence number, lowest sequence number still in flight)
// in the RPC header. The tracker remembers the WriteResponsePB of each completed
// request, so a retry of a write that was applied is answered with the original
// response instead of being applied again (which would, e.g., turn a successful
// INSERT into ALREADY_PRESENT). A retry arriving while the original is still
// running waits for it and gets the same response.
//
// Memory: a client's responses below its first_incomplete_seq_no are dropped as
// soon as it says so; a client silent for --write_dedup_ttl_ms is forgotten.
// Responses of requests that failed as a whole (nothing written) are not kept: a
// retry runs again.
//
// Thread-safety: thread-safe. Responding to waiting duplicates happens outside
// the lock.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/monotime.h"
#include "common/mutex.h"
#include "rpc/rpc_header.pb.h"
#include "tserver/tserver.pb.h"

namespace nyala::rpc {
class RpcContext;
}

namespace nyala::tserver {

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
  // with a copy; remembers `resp` when `remember` (it was applied).
  void Finish(const rpc::RequestIdPB& id, const WriteResponsePB& resp, bool remember);

  size_t NumClientsForTests() const;
  size_t NumResponsesForTests() const;

 private:
  struct Entry {
    bool done = false;
    WriteResponsePB resp;
    std::vector<std::pair<WriteResponsePB*, rpc::RpcContext*>> waiters;
  };
  struct Client {
    int64_t first_incomplete = 0;
    MonoTime last_access;
    std::map<int64_t, Entry> entries;
  };
  void SweepLocked(MonoTime now) REQUIRES(mu_);

  mutable Mutex mu_;
  std::unordered_map<std::string, Client> clients_ GUARDED_BY(mu_);
  MonoTime last_sweep_ GUARDED_BY(mu_);
};

}  // namespace nyala::tserver
