// The write command's codec (write_command.h).
#include "tserver/write_command.h"

#include <glog/logging.h>

#include "common/coding.h"

namespace nyala::tserver {

namespace {
constexpr uint64_t kCommandVersion = 1;
constexpr uint64_t kSchemaChangeVersion = 2;
constexpr uint8_t kPut = 0, kDelete = 1;
}  // namespace

void EncodeRowChange(Slice key, const Slice* value, std::string* dst) {
  dst->push_back(char(value ? kPut : kDelete));
  PutLengthPrefixed(dst, key);
  if (value) PutLengthPrefixed(dst, *value);
}

std::string EncodeWriteCommand(uint32_t num_changes, const std::string& changes,
                               const rpc::RequestIdPB* request_id, const WriteResponsePB& resp) {
  std::string out;
  out.reserve(changes.size() + 16);
  PutVarint64(&out, kCommandVersion);
  PutVarint64(&out, num_changes);
  out.append(changes);
  out.push_back(request_id ? 1 : 0);
  if (request_id) {
    PutLengthPrefixed(&out, request_id->SerializeAsString());
    PutLengthPrefixed(&out, resp.SerializeAsString());
  }
  return out;
}

std::string EncodeSchemaChangeCommand(const AlterSchemaRequestPB& change) {
  std::string out;
  PutVarint64(&out, kSchemaChangeVersion);
  AlterSchemaRequestPB pb = change;
  pb.clear_dest_uuid();
  PutLengthPrefixed(&out, pb.SerializeAsString());
  return out;
}

Status DecodeWriteCommand(Slice in, DecodedWriteCommand* out) {
  auto bad = [](const char* what) {
    return Status::Corruption("replicated write command", what);
  };
  uint64_t version = 0, n = 0;
  if (!GetVarint64(&in, &version)) return bad("truncated version");
  out->is_schema_change = version == kSchemaChangeVersion;
  if (out->is_schema_change) {
    Slice pb;
    out->changes.clear();
    out->has_request = false;
    if (!GetLengthPrefixed(&in, &pb)) return bad("truncated schema change");
    if (!out->schema_change.ParseFromArray(pb.data(), int(pb.size()))) {
      return bad("unparseable schema change");
    }
    if (in.size() != 0) return bad("trailing bytes");
    return Status::OK();
  }
  if (version != kCommandVersion) return bad("unknown format version");
  if (!GetVarint64(&in, &n) || n > in.size()) return bad("bad number of row changes");
  out->changes.clear();
  out->changes.reserve(n);
  for (uint64_t i = 0; i < n; i++) {
    if (in.size() < 1) return bad("truncated row change");
    const uint8_t kind = in.data()[0];
    in.remove_prefix(1);
    DecodedWriteCommand::Change c;
    if (kind != kPut && kind != kDelete) return bad("unknown row change kind");
    c.is_delete = kind == kDelete;
    if (!GetLengthPrefixed(&in, &c.key)) return bad("truncated key");
    if (!c.is_delete && !GetLengthPrefixed(&in, &c.value)) return bad("truncated value");
    out->changes.push_back(c);
  }
  if (in.size() < 1) return bad("truncated request flag");
  out->has_request = in.data()[0] == 1;
  in.remove_prefix(1);
  if (out->has_request) {
    Slice id, resp;
    if (!GetLengthPrefixed(&in, &id) || !GetLengthPrefixed(&in, &resp)) {
      return bad("truncated request record");
    }
    if (!out->request_id.ParseFromArray(id.data(), int(id.size())) ||
        !out->response.ParseFromArray(resp.data(), int(resp.size()))) {
      return bad("unparseable request record");
    }
  }
  if (in.size() != 0) return bad("trailing bytes");
  return Status::OK();
}

}  // namespace nyala::tserver
