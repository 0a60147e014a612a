// Owners for libevent handles: an event or event_base is held by one of these from
// the moment it is made, and freed when its owner goes. The deleters are defined in
// libevent_util.cc, so a header may hold an EventPtr without including libevent.
//
//   EventBasePtr base(event_base_new());
//   EventPtr ev(event_new(base.get(), fd, EV_READ, &OnRead, this));
//
// Freeing an event that is pending removes it from its base first (event_free does),
// so an owner must go before the base it was made on. Thread-safety: as libevent's;
// free an event on the thread that runs its base's loop, or when the loop has stopped.
#pragma once

#include <memory>

struct event;
struct event_base;

namespace nyala::rpc {

struct EventDeleter {
  void operator()(event* ev) const;
};
struct EventBaseDeleter {
  void operator()(event_base* base) const;
};

using EventPtr = std::unique_ptr<event, EventDeleter>;
using EventBasePtr = std::unique_ptr<event_base, EventBaseDeleter>;

}  // namespace nyala::rpc
