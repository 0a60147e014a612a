// Conversions between in-memory types and their protobuf forms that have no
// class of their own to live in: Status <-> AppStatusPB. (Schema, PartitionSchema,
// Partition and ColumnPredicate carry their own ToPB/FromPB.)
//
// Stateless functions; thread-safe.
#pragma once

#include "common/status.h"

namespace nyala {

class AppStatusPB;

// Fills `pb` with the code, message and POSIX code of `s` (code 0 for OK).
void StatusToPB(const Status& s, AppStatusPB* pb);
// The Status `pb` describes; an unknown code becomes RuntimeError (see Status::FromCode).
Status StatusFromPB(const AppStatusPB& pb);

}  // namespace nyala
