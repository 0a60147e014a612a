#include "rpc/serialization.h"
#include "common/status.h"

#include <glog/logging.h>

#include <cstring>

#include "common/coding.h"
#include "rpc/rpc_header.pb.h"

namespace nyala::rpc {

size_t OutboundFrame::size() const {
  size_t n = head.size();
  for (const auto& s : sidecars) n += s.size();
  return n;
}

int GatherFrames(const std::deque<OutboundFrame>& frames, size_t offset, char* gather,
                 size_t gather_size, iovec* iov, int max_iov, size_t* bytes) {
  int n = 0;
  size_t total = 0;
  size_t gathered = 0;  // bytes of `gather` used
  bool in_run = false;  // iov[n - 1] is a run in `gather` that may grow
  bool full = false;    // a piece did not fit: what iov holds is the prefix to send
  size_t skip = offset;
  auto add = [&](const std::string& s) {
    if (full) return;
    if (skip >= s.size()) {
      skip -= s.size();
      return;
    }
    const char* p = s.data() + skip;
    const size_t len = s.size() - skip;
    skip = 0;
    const bool copy = len <= kGatherPieceBytes && gathered + len <= gather_size;
    if (!(copy && in_run)) {
      if (n == max_iov) {
        full = true;
        return;
      }
      iov[n].iov_base = copy ? gather + gathered : const_cast<char*>(p);
      iov[n].iov_len = 0;
      n++;
    }
    if (copy) memcpy(gather + gathered, p, len);
    gathered += copy ? len : 0;
    iov[n - 1].iov_len += len;
    in_run = copy;
    total += len;
  };
  for (auto it = frames.begin(); it != frames.end() && !full; ++it) {
    add(it->head);
    for (const auto& sc : it->sidecars) add(sc);
  }
  *bytes = total;
  return n;
}

std::vector<uint32_t> SidecarOffsets(const std::vector<std::string>& sidecars) {
  std::vector<uint32_t> out;
  out.reserve(sidecars.size());
  uint32_t off = 0;
  for (const auto& s : sidecars) {
    out.push_back(off);
    off += s.size();
  }
  return out;
}

namespace {

// Fills out->head for a frame whose header is `hlen` bytes written by write_header(p)
// (which returns one past the last byte), then `body` and `sidecars`.
template <typename WriteHeader>
Status BuildFrame(size_t hlen, const WriteHeader& write_header,
                  const google::protobuf::MessageLite& body, std::vector<std::string> sidecars,
                  uint32_t max_message_size, OutboundFrame* out) {
  const size_t blen = body.ByteSizeLong();
  size_t sidecar_bytes = 0;
  for (const auto& s : sidecars) sidecar_bytes += s.size();
  const size_t payload = VarintLength(hlen) + hlen + VarintLength(blen) + blen + sidecar_bytes;
  if (payload + kFrameLengthBytes > max_message_size) {
    return Status::InvalidArgument("RPC message too large",
                                   std::to_string(payload + kFrameLengthBytes) + " bytes, limit " +
                                       std::to_string(max_message_size));
  }
  std::string& buf = out->head;
  const size_t head_len = kFrameLengthBytes + payload - sidecar_bytes;
  buf.resize(head_len);
  auto* p = reinterpret_cast<uint8_t*>(buf.data());
  EncodeFixed32BE(p, uint32_t(payload));
  p += kFrameLengthBytes;
  p = EncodeVarint64(p, hlen);
  p = write_header(p);
  p = EncodeVarint64(p, blen);
  p = body.SerializeWithCachedSizesToArray(p);
  DCHECK_EQ(size_t(p - reinterpret_cast<uint8_t*>(buf.data())), head_len);
  out->sidecars = std::move(sidecars);
  return Status::OK();
}

// Protobuf tags of RequestHeaderPB, then ResponseHeaderPB: (field number << 3) | wire
// type (0 varint, 2 length-delimited).
constexpr uint8_t kCallIdTag = (1 << 3) | 0;
constexpr uint8_t kServiceNameTag = (2 << 3) | 2;
constexpr uint8_t kMethodNameTag = (3 << 3) | 2;
constexpr uint8_t kTimeoutMsTag = (4 << 3) | 0;
constexpr uint8_t kRequestIdTag = (6 << 3) | 2;
constexpr uint8_t kSidecarOffsetsTag = (7 << 3) | 0;  // proto2 repeated: not packed
constexpr uint8_t kCallerWaitsTag = (8 << 3) | 0;
constexpr uint8_t kResponseCallIdTag = (1 << 3) | 0;
constexpr uint8_t kResponseIsErrorTag = (2 << 3) | 0;
constexpr uint8_t kResponseSidecarOffsetsTag = (3 << 3) | 0;

uint8_t* PutBytes(uint8_t* p, uint8_t tag, std::string_view s) {
  *p++ = tag;
  p = EncodeVarint64(p, s.size());
  memcpy(p, s.data(), s.size());
  return p + s.size();
}

uint8_t* PutNumber(uint8_t* p, uint8_t tag, uint64_t v) {
  *p++ = tag;
  return EncodeVarint64(p, v);
}

// int32 fields: negative values are sign-extended to ten bytes, as protobuf does.
uint64_t Int32Bits(int32_t v) { return uint64_t(int64_t(v)); }

// The header's size. Also leaves request_id's size cached for WriteRequestHeader.
size_t RequestHeaderSize(const RequestHeaderFields& f) {
  size_t n = 1 + VarintLength(Int32Bits(f.call_id));
  n += 1 + VarintLength(f.service_name.size()) + f.service_name.size();
  n += 1 + VarintLength(f.method_name.size()) + f.method_name.size();
  if (f.timeout_ms != 0) n += 1 + VarintLength(f.timeout_ms);
  if (f.request_id) {
    const size_t len = f.request_id->ByteSizeLong();
    n += 1 + VarintLength(len) + len;
  }
  for (uint32_t off : f.sidecar_offsets) n += 1 + VarintLength(off);
  if (f.caller_waits) n += 2;
  return n;
}

uint8_t* WriteRequestHeader(const RequestHeaderFields& f, uint8_t* p) {
  p = PutNumber(p, kCallIdTag, Int32Bits(f.call_id));
  p = PutBytes(p, kServiceNameTag, f.service_name);
  p = PutBytes(p, kMethodNameTag, f.method_name);
  if (f.timeout_ms != 0) p = PutNumber(p, kTimeoutMsTag, f.timeout_ms);
  if (f.request_id) {
    p = PutNumber(p, kRequestIdTag, uint64_t(f.request_id->GetCachedSize()));
    p = f.request_id->SerializeWithCachedSizesToArray(p);
  }
  for (uint32_t off : f.sidecar_offsets) p = PutNumber(p, kSidecarOffsetsTag, off);
  if (f.caller_waits) p = PutNumber(p, kCallerWaitsTag, 1);
  return p;
}

size_t ResponseHeaderSize(int32_t call_id, bool is_error,
                          const std::vector<uint32_t>& sidecar_offsets) {
  size_t n = 1 + VarintLength(Int32Bits(call_id)) + (is_error ? 2 : 0);
  for (uint32_t off : sidecar_offsets) n += 1 + VarintLength(off);
  return n;
}

uint8_t* WriteResponseHeader(int32_t call_id, bool is_error,
                             const std::vector<uint32_t>& sidecar_offsets, uint8_t* p) {
  p = PutNumber(p, kResponseCallIdTag, Int32Bits(call_id));
  if (is_error) p = PutNumber(p, kResponseIsErrorTag, 1);
  for (uint32_t off : sidecar_offsets) p = PutNumber(p, kResponseSidecarOffsetsTag, off);
  return p;
}

}  // namespace

void EncodeRequestHeader(const RequestHeaderFields& fields, std::string* out) {
  out->resize(RequestHeaderSize(fields));
  auto* begin = reinterpret_cast<uint8_t*>(out->data());
  const uint8_t* end = WriteRequestHeader(fields, begin);
  DCHECK_EQ(size_t(end - begin), out->size());
}

void EncodeResponseHeader(int32_t call_id, bool is_error,
                          const std::vector<uint32_t>& sidecar_offsets, std::string* out) {
  out->resize(ResponseHeaderSize(call_id, is_error, sidecar_offsets));
  auto* begin = reinterpret_cast<uint8_t*>(out->data());
  const uint8_t* end = WriteResponseHeader(call_id, is_error, sidecar_offsets, begin);
  DCHECK_EQ(size_t(end - begin), out->size());
}

Status SerializeRequestFrame(const RequestHeaderFields& header,
                             const google::protobuf::MessageLite& body,
                             std::vector<std::string> sidecars, uint32_t max_message_size,
                             OutboundFrame* out) {
  return BuildFrame(
      RequestHeaderSize(header), [&](uint8_t* p) { return WriteRequestHeader(header, p); }, body,
      std::move(sidecars), max_message_size, out);
}

Status SerializeResponseFrame(int32_t call_id, bool is_error,
                              const google::protobuf::MessageLite& body,
                              std::vector<std::string> sidecars, uint32_t max_message_size,
                              OutboundFrame* out) {
  const std::vector<uint32_t> offsets = SidecarOffsets(sidecars);
  return BuildFrame(
      ResponseHeaderSize(call_id, is_error, offsets),
      [&](uint8_t* p) { return WriteResponseHeader(call_id, is_error, offsets, p); }, body,
      std::move(sidecars), max_message_size, out);
}

Status SerializeFrame(const google::protobuf::MessageLite& header,
                      const google::protobuf::MessageLite& body, std::vector<std::string> sidecars,
                      uint32_t max_message_size, OutboundFrame* out) {
  return BuildFrame(
      header.ByteSizeLong(), [&](uint8_t* p) { return header.SerializeWithCachedSizesToArray(p); },
      body, std::move(sidecars), max_message_size, out);
}

Status PeekFrameLength(Slice buf, uint32_t max_message_size, size_t* frame_len) {
  if (buf.size() < kFrameLengthBytes) return Status::Incomplete("need length prefix");
  const uint64_t len = uint64_t(DecodeFixed32BE(buf.data())) + kFrameLengthBytes;
  if (len > max_message_size && std::memcmp(buf.data(), "HTTP", 4) == 0) {
    // An HTTP server's answer ("HTTP/1.1 400 ..."), read as a length of 1213486164.
    return Status::InvalidArgument(
        "the other side answered in HTTP, not Nyala RPC: this is probably a web UI port",
        "use the RPC port (by default 7051 for a master, 7050 for a tablet server)");
  }
  if (len > max_message_size) {
    return Status::InvalidArgument("frame of " + std::to_string(len) +
                                   " bytes exceeds --rpc_max_message_size of " +
                                   std::to_string(max_message_size));
  }
  *frame_len = len;
  return Status::OK();
}

Status SplitFrame(Slice payload, FrameParts* parts) {
  if (!GetLengthPrefixed(&payload, &parts->header)) {
    return Status::Corruption("malformed header length in frame");
  }
  if (!GetLengthPrefixed(&payload, &parts->body)) {
    return Status::Corruption("malformed body length in frame");
  }
  parts->sidecar_area = payload;
  return Status::OK();
}

Status SplitSidecars(const google::protobuf::RepeatedField<uint32_t>& offsets, Slice area,
                     std::vector<Slice>* sidecars) {
  sidecars->clear();
  if (offsets.empty()) {
    if (!area.empty()) return Status::Corruption("trailing bytes after body without sidecars");
    return Status::OK();
  }
  if (offsets[0] != 0) return Status::Corruption("first sidecar offset is not 0");
  for (int i = 0; i < offsets.size(); i++) {
    const uint32_t begin = offsets[i];
    const uint32_t end = i + 1 < offsets.size() ? offsets[i + 1] : uint32_t(area.size());
    if (end < begin || end > area.size()) {
      return Status::Corruption("sidecar offset out of range", std::to_string(begin));
    }
    sidecars->emplace_back(area.data() + begin, end - begin);
  }
  return Status::OK();
}

Status ParseFrameForFuzz(Slice data, uint32_t max_message_size) {
  if (data.size() < kPreambleLen) return Status::Incomplete("short preamble");
  if (memcmp(data.data(), kPreamble, kPreambleLen) != 0) return Status::InvalidArgument("preamble");
  data.remove_prefix(kPreambleLen);
  while (!data.empty()) {
    size_t frame_len;
    RETURN_NOT_OK(PeekFrameLength(data, max_message_size, &frame_len));
    if (data.size() < frame_len) return Status::Incomplete("partial frame");
    FrameParts parts;
    RETURN_NOT_OK(
        SplitFrame(Slice(data.data() + kFrameLengthBytes, frame_len - kFrameLengthBytes), &parts));
    // As Connection::HandleRequestFrame does: ParseFromArray would log every missing
    // required field through protobuf's logger.
    RequestHeaderPB header;
    if (!header.ParsePartialFromArray(parts.header.data(), int(parts.header.size()))) {
      return Status::Corruption("header");
    }
    if (!header.IsInitialized()) return Status::InvalidArgument("header lacks required fields");
    std::vector<Slice> sidecars;
    RETURN_NOT_OK(SplitSidecars(header.sidecar_offsets(), parts.sidecar_area, &sidecars));
    data.remove_prefix(frame_len);
  }
  return Status::OK();
}

}  // namespace nyala::rpc
