// MasterClient: calls to the master service with the client's retry policy. A call
// is retried with backoff, moving on to the next master, while the master is
// unreachable, too busy, not the leader or still starting, until the deadline.
// Other master errors become a Status (MasterErrorToStatus).
//
// Thread-safety: thread-safe. Call() blocks and must not run on a reactor thread;
// AsyncCall() may run anywhere, its `done` runs on a reactor or timer thread. Every
// Resp type has an `error` field of MasterErrorPB.
#pragma once

#include <algorithm>
#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "client/latch.h"
#include "client/timer_queue.h"
#include "common/status.h"
#include "master/master.pb.h"
#include "master/master.proxy.h"
#include "nyala/monotime.h"
#include "rpc/messenger.h"
#include "rpc/retry.h"
#include "rpc/rpc_controller.h"

namespace nyala::client::internal {

// The Status a MasterErrorPB describes (its AppStatusPB when set, else by code).
Status MasterErrorToStatus(const master::MasterErrorPB& err);
// Errors after which another master, or the same one later, may answer.
bool IsRetriableMasterError(const master::MasterErrorPB& err);

class MasterClient {
 public:
  // `timers` must outlive this object; calls in flight must have finished before it
  // is destroyed (the messenger's Shutdown() ends them).
  MasterClient(std::shared_ptr<rpc::Messenger> messenger, std::vector<rpc::Sockaddr> masters,
               TimerQueue* timers, MonoDelta rpc_timeout)
      : messenger_(std::move(messenger)),
        masters_(std::move(masters)),
        timers_(timers),
        rpc_timeout_(rpc_timeout) {}

  // One of MasterServiceProxy's <Method>Async members, e.g.
  // &master::MasterServiceProxy::GetTableLocationsAsync.
  template <typename Req, typename Resp>
  using AsyncMethod = void (master::MasterServiceProxy::*)(const Req&, Resp*, rpc::RpcController*,
                                                           std::function<void()>) const;

  template <typename Req, typename Resp>
  void AsyncCall(AsyncMethod<Req, Resp> method, std::shared_ptr<const Req> req,
                 std::shared_ptr<Resp> resp, MonoTime deadline,
                 std::function<void(const Status&)> done) {
    auto st = std::make_shared<CallState<Req, Resp>>();
    st->method = method;
    st->req = std::move(req);
    st->resp = std::move(resp);
    st->deadline = deadline;
    st->done = std::move(done);
    st->master_idx = leader_hint_.load(std::memory_order_relaxed) % masters_.size();
    Attempt(st);
  }

  template <typename Req, typename Resp>
  Status Call(AsyncMethod<Req, Resp> method, const Req& req, Resp* resp, MonoTime deadline) {
    auto req_copy = std::make_shared<const Req>(req);
    auto resp_holder = std::make_shared<Resp>();
    CountDownLatch latch(1);
    Status result;
    AsyncCall<Req, Resp>(method, req_copy, resp_holder, deadline, [&](const Status& s) {
      result = s;
      latch.CountDown();
    });
    latch.Wait();
    resp->Swap(resp_holder.get());
    return result;
  }

  int64_t num_calls() const { return num_calls_.load(); }
  const std::vector<rpc::Sockaddr>& masters() const { return masters_; }

 private:
  // "GetTableLocations" for a GetTableLocationsRequestPB (for messages).
  template <typename Req>
  static std::string MethodName() {
    std::string name = Req::descriptor()->name();
    const std::string suffix = "RequestPB";
    if (name.size() > suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      name.resize(name.size() - suffix.size());
    }
    return name;
  }

  template <typename Req, typename Resp>
  struct CallState {
    AsyncMethod<Req, Resp> method;
    std::shared_ptr<const Req> req;
    std::shared_ptr<Resp> resp;
    MonoTime deadline;
    std::function<void(const Status&)> done;
    rpc::RpcController rpc;
    size_t master_idx = 0;
    int attempt = 0;
  };

  template <typename Req, typename Resp>
  void Attempt(std::shared_ptr<CallState<Req, Resp>> st) {
    MonoDelta left = st->deadline - MonoTime::Now();
    if (left <= MonoDelta()) {
      st->done(Status::TimedOut("master call " + MethodName<Req>() + " timed out after " +
                                std::to_string(st->attempt) + " attempts"));
      return;
    }
    st->rpc.Reset();
    st->rpc.set_timeout(std::min(left, rpc_timeout_));
    st->resp->Clear();
    num_calls_.fetch_add(1, std::memory_order_relaxed);
    master::MasterServiceProxy proxy(messenger_, masters_[st->master_idx]);
    (proxy.*(st->method))(*st->req, st->resp.get(), &st->rpc, [this, st]() { OnResponse(st); });
  }

  template <typename Req, typename Resp>
  void OnResponse(std::shared_ptr<CallState<Req, Resp>> st) {
    Status s = st->rpc.status();
    bool retry = false;
    bool next_master = false;
    if (!s.ok()) {
      retry = rpc::IsRetriableRpcError(st->rpc) || s.IsTimedOut();
      next_master = !st->rpc.server_too_busy();
    } else if (st->resp->has_error()) {
      s = MasterErrorToStatus(st->resp->error());
      retry = IsRetriableMasterError(st->resp->error());
      next_master = true;
    } else {
      leader_hint_.store(st->master_idx, std::memory_order_relaxed);
      st->done(s);
      return;
    }
    if (retry) {
      MonoDelta backoff = rpc::ComputeBackoff(st->attempt++);
      if (MonoTime::Now() + backoff < st->deadline) {
        if (next_master) st->master_idx = (st->master_idx + 1) % masters_.size();
        timers_->Schedule(backoff, [this, st]() { Attempt(st); });
        return;
      }
      s = Status::TimedOut(
          "master call " + MethodName<Req>() + " did not succeed before its deadline",
          s.ToString());
    }
    st->done(s.CloneAndPrepend("master " + masters_[st->master_idx].ToString()));
  }

  const std::shared_ptr<rpc::Messenger> messenger_;
  const std::vector<rpc::Sockaddr> masters_;
  TimerQueue* const timers_;
  const MonoDelta rpc_timeout_;
  std::atomic<size_t> leader_hint_{0};
  std::atomic<int64_t> num_calls_{0};
};

}  // namespace nyala::client::internal
