// Frame encoding and decoding for the RPC wire format (docs/wire-format.md):
//
//   connection := preamble frame*
//   preamble   := "nyrpc" 0x01
//   frame      := u32be(len) varint(hlen) header[hlen] varint(blen) body[blen] sidecars
//
// where `len` counts every byte after itself and the header lists the sidecar offsets
// relative to the first sidecar byte. Pure functions; thread-safe. The fuzz target
// (serialization_fuzz.cc) drives ParseFrameForFuzz with arbitrary bytes.
#pragma once

#include <google/protobuf/message_lite.h>
#include <google/protobuf/repeated_field.h>

#include <sys/uio.h>

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "nyala/slice.h"
#include "rpc/rpc_header.pb.h"

namespace nyala::rpc {

constexpr char kPreamble[] = {'n', 'y', 'r', 'p', 'c', 1};
constexpr int kPreambleLen = 6;
constexpr int kPreambleMagicLen = 5;  // "nyrpc" without the version byte
constexpr uint8_t kProtocolVersion = 1;
constexpr int kFrameLengthBytes = 4;

// One frame ready to send: `head` holds the length prefix, header and body; the
// sidecars follow it on the wire without being copied into it.
struct OutboundFrame {
  std::string head;
  std::vector<std::string> sidecars;
  size_t size() const;
};

// The writer's gather step (Connection::FlushLocked): describes in `iov` the bytes of
// `frames` from byte `offset` of the first frame on, in order, as far as `max_iov`
// entries and `gather_size` bytes of `gather` allow. A piece (a frame's head or one of
// its sidecars) of up to kGatherPieceBytes is copied into `gather`, and consecutive
// copied pieces share one entry; a larger piece gets an entry of its own that points
// into the frame. The kernel's cost per iovec entry is several times that of copying
// a 50-byte response here. Returns the number of entries, and their total length in
// *bytes: always a prefix of what is left to send, empty only when nothing is.
constexpr size_t kGatherPieceBytes = 512;
int GatherFrames(const std::deque<OutboundFrame>& frames, size_t offset, char* gather,
                 size_t gather_size, iovec* iov, int max_iov, size_t* bytes);

// The fields of a RequestHeaderPB that a client sets on a call.
struct RequestHeaderFields {
  int32_t call_id = 0;
  std::string_view service_name;
  std::string_view method_name;
  uint32_t timeout_ms = 0;                  // 0: none
  const RequestIdPB* request_id = nullptr;  // null: none
  std::vector<uint32_t> sidecar_offsets;
  bool caller_waits = false;
};
// Replaces *out with the bytes RequestHeaderPB::SerializeAsString() gives for
// `fields` (protobuf writes fields in number order), without building the message.
void EncodeRequestHeader(const RequestHeaderFields& fields, std::string* out);

// The same for a ResponseHeaderPB.
void EncodeResponseHeader(int32_t call_id, bool is_error,
                          const std::vector<uint32_t>& sidecar_offsets, std::string* out);

// Builds a frame. `header` must already list `sidecars`' offsets (see SidecarOffsets).
// Fails (InvalidArgument) only if the frame would exceed `max_message_size`.
Status SerializeFrame(const google::protobuf::MessageLite& header,
                      const google::protobuf::MessageLite& body, std::vector<std::string> sidecars,
                      uint32_t max_message_size, OutboundFrame* out);

// Frames with the header written straight into them from its fields (as
// EncodeRequestHeader/EncodeResponseHeader encode it), without a header message: a
// client's and a server's every call. The response header lists `sidecars`' offsets.
Status SerializeRequestFrame(const RequestHeaderFields& header,
                             const google::protobuf::MessageLite& body,
                             std::vector<std::string> sidecars, uint32_t max_message_size,
                             OutboundFrame* out);
Status SerializeResponseFrame(int32_t call_id, bool is_error,
                              const google::protobuf::MessageLite& body,
                              std::vector<std::string> sidecars, uint32_t max_message_size,
                              OutboundFrame* out);

// The offsets to put in a header for these sidecars.
std::vector<uint32_t> SidecarOffsets(const std::vector<std::string>& sidecars);

// Reads the length prefix at the start of `buf`. Returns Incomplete if fewer than four
// bytes are there, InvalidArgument if the frame is larger than `max_message_size`,
// else OK with *frame_len = the whole frame's size including the prefix.
Status PeekFrameLength(Slice buf, uint32_t max_message_size, size_t* frame_len);

// The parts of one complete frame (the bytes after its length prefix).
struct FrameParts {
  Slice header;
  Slice body;
  Slice sidecar_area;
};
// Corruption if the varint lengths are malformed or overrun the frame.
Status SplitFrame(Slice payload, FrameParts* parts);

// Cuts `area` at `offsets`. Corruption if the offsets are not ascending from 0 or
// point past the end.
Status SplitSidecars(const google::protobuf::RepeatedField<uint32_t>& offsets, Slice area,
                     std::vector<Slice>* sidecars);

// Parses as much of `data` as a server connection would: preamble, then frames and
// their request headers. Returns the first error, or OK at a clean end. For fuzzing.
Status ParseFrameForFuzz(Slice data, uint32_t max_message_size);

}  // namespace nyala::rpc
