// The command a tablet's Raft group replicates for one write: the row changes the
// leader decided on (after its existence checks, under its row locks), and the
// request's id and final response, which every replica stores as the request's
// exactly-once record. Part of the consensus log's on-disk and wire format:
//
//   varint  format version (1)
//   varint  number of row changes, then each change:
//           byte kind (0: put, 1: delete), length-prefixed key (the encoded primary
//           key, without the tablet's storage prefix), for a put the length-prefixed
//           row value
//   byte    1 if the request has an id, then length-prefixed RequestIdPB and
//           length-prefixed WriteResponsePB; else 0
//
// A schema change (the tablet's new schema and table name) is a command of its own:
//
//   varint  format version (2)
//   length-prefixed AlterSchemaRequestPB (without dest_uuid)
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "nyala/slice.h"
#include "rpc/rpc_header.pb.h"
#include "tserver/tserver.pb.h"
#include "tserver/tserver_admin.pb.h"

namespace nyala::tserver {

// Appends one row change: a put of `*value`, or a delete when `value` is null.
void EncodeRowChange(Slice key, const Slice* value, std::string* dst);

// The whole command from `num_changes` changes encoded back to back in `changes`.
std::string EncodeWriteCommand(uint32_t num_changes, const std::string& changes,
                               const rpc::RequestIdPB* request_id, const WriteResponsePB& resp);

// The command of a schema change.
std::string EncodeSchemaChangeCommand(const AlterSchemaRequestPB& change);

struct DecodedWriteCommand {
  // A schema change: `schema_change` holds it, and there are no row changes.
  bool is_schema_change = false;
  AlterSchemaRequestPB schema_change;
  struct Change {
    Slice key;
    Slice value;
    bool is_delete = false;
  };
  std::vector<Change> changes;  // pointing into the command
  bool has_request = false;
  rpc::RequestIdPB request_id;
  WriteResponsePB response;
};

// Corruption when `command` does not decode.
Status DecodeWriteCommand(Slice command, DecodedWriteCommand* out);

}  // namespace nyala::tserver
