#include "rpc/libevent_util.h"

#include <event2/event.h>

namespace nyala::rpc {

void EventDeleter::operator()(event* ev) const { event_free(ev); }
void EventBaseDeleter::operator()(event_base* base) const { event_base_free(base); }

}  // namespace nyala::rpc
