// ClientData: what a Client owns: the messenger, the timer thread, the master
// client, the meta cache and the write request ids. Created by ClientBuilder;
// destroyed with the Client, after every Session, Table and Scanner of it (they
// hold the Client).
//
// Thread-safety: the members are thread-safe objects set once at construction; the
// schema cache has a lock of its own.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/mutex.h"

#include "client/get_coalescer.h"
#include "client/master_client.h"
#include "client/meta_cache.h"
#include "client/request_id_allocator.h"
#include "client/timer_queue.h"
#include "nyala/client.h"
#include "nyala/monotime.h"
#include "rpc/messenger.h"

namespace nyala::client::internal {

class ClientData {
 public:
  ClientData(std::shared_ptr<rpc::Messenger> messenger, std::vector<rpc::Sockaddr> masters,
             MonoDelta rpc_timeout, MonoDelta admin_timeout, std::string client_id,
             bool share_gets = true);
  // Stops the timer thread, then the messenger (failing calls still in flight).
  ~ClientData();

  const std::shared_ptr<rpc::Messenger>& messenger() const { return messenger_; }
  TimerQueue* timers() { return &timers_; }
  MasterClient* master() { return &master_; }
  MetaCache* meta_cache() { return &meta_cache_; }
  RequestIdAllocator* request_ids() { return &request_ids_; }
  // Null when the client was built with share_concurrent_gets(false).
  GetCoalescer* get_coalescer() { return share_gets_ ? &get_coalescer_ : nullptr; }
  MonoDelta rpc_timeout() const { return rpc_timeout_; }
  MonoDelta admin_timeout() const { return admin_timeout_; }

  MonoTime AdminDeadline() const { return MonoTime::Now() + admin_timeout_; }
  // Which replica this client's kClosestReplica reads prefer among equals
  // (RemoteTablet::ClosestReplica): random per client, so clients spread.
  size_t replica_pick() const { return replica_pick_; }

  // The newest schema this client has seen of table `table_id` after a tablet refused
  // a write built against an older one (null when none): later writes built against
  // an older Table are translated to it before they are sent.
  std::shared_ptr<const Schema> NewestSchema(const std::string& table_id) const
      EXCLUDES(schemas_mu_);
  // Keeps `schema` unless a newer one is kept; returns the newest kept.
  std::shared_ptr<const Schema> NoteSchema(const std::string& table_id,
                                           std::shared_ptr<const Schema> schema)
      EXCLUDES(schemas_mu_);

 private:
  const std::shared_ptr<rpc::Messenger> messenger_;
  const MonoDelta rpc_timeout_;
  const MonoDelta admin_timeout_;
  const bool share_gets_;
  const size_t replica_pick_;
  TimerQueue timers_;
  MasterClient master_;
  MetaCache meta_cache_;
  RequestIdAllocator request_ids_;
  GetCoalescer get_coalescer_;
  mutable Mutex schemas_mu_;
  std::map<std::string, std::shared_ptr<const Schema>> schemas_ GUARDED_BY(schemas_mu_);
};

}  // namespace nyala::client::internal
