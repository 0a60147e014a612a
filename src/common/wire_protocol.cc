#include "common/wire_protocol.h"

#include "common/common.pb.h"

namespace nyala {

void StatusToPB(const Status& s, AppStatusPB* pb) {
  pb->Clear();
  pb->set_code(s.code());
  if (!s.ok()) pb->set_message(s.message());
  pb->set_posix_code(s.posix_code());
}

Status StatusFromPB(const AppStatusPB& pb) {
  return Status::FromCode(pb.code(), pb.message(), pb.posix_code());
}

}  // namespace nyala
