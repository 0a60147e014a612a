#include "common/status.h"

#include <ostream>

namespace nyala {

Status::Status(Code code, std::string_view msg, std::string_view msg2, int posix)
    : state_(std::make_unique<State>()) {
  state_->code = code;
  state_->posix = posix;
  state_->msg.reserve(msg.size() + (msg2.empty() ? 0 : msg2.size() + 2));
  state_->msg.append(msg);
  if (!msg2.empty()) {
    state_->msg.append(": ");
    state_->msg.append(msg2);
  }
}

Status Status::FromCode(int code, std::string_view msg, int posix) {
  if (code == kOk) return Status::OK();
  if (code < kNotFound || code > kCancelled) {
    return Status(kRuntimeError, msg, "(unknown status code " + std::to_string(code) + ")", posix);
  }
  return Status(static_cast<Code>(code), msg, {}, posix);
}

const std::string& Status::message() const {
  static const std::string kEmpty;
  return state_ ? state_->msg : kEmpty;
}

const char* Status::CodeName(Code code) {
  switch (code) {
    case kOk:
      return "OK";
    case kNotFound:
      return "Not found";
    case kCorruption:
      return "Corruption";
    case kNotSupported:
      return "Not supported";
    case kInvalidArgument:
      return "Invalid argument";
    case kIOError:
      return "IO error";
    case kAlreadyPresent:
      return "Already present";
    case kRuntimeError:
      return "Runtime error";
    case kNetworkError:
      return "Network error";
    case kIllegalState:
      return "Illegal state";
    case kNotAuthorized:
      return "Not authorized";
    case kAborted:
      return "Aborted";
    case kRemoteError:
      return "Remote error";
    case kServiceUnavailable:
      return "Service unavailable";
    case kTimedOut:
      return "Timed out";
    case kUninitialized:
      return "Uninitialized";
    case kConfigurationError:
      return "Configuration error";
    case kIncomplete:
      return "Incomplete";
    case kEndOfFile:
      return "End of file";
    case kCancelled:
      return "Cancelled";
  }
  return "Unknown";
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string out = CodeName(state_->code);
  out += ": ";
  out += state_->msg;
  if (state_->posix != 0) {
    out += " (error " + std::to_string(state_->posix) + ")";
  }
  return out;
}

Status Status::CloneAndPrepend(std::string_view context) const {
  if (ok()) return Status();
  std::string msg(context);
  msg += ": ";
  msg += state_->msg;
  return Status(state_->code, msg, {}, state_->posix);
}

}  // namespace nyala
