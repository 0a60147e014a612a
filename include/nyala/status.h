// Status: the outcome of an operation, a code plus a message. OK costs one null
// pointer, so returning it on the fast path is free. Never thrown; every fallible
// call in Nyala returns a Status or a Result<T> (result.h).
//
// Thread-safety: a Status is a value; distinct objects may be used from distinct
// threads, one object is not synchronised.
//
// Part of the public client API: includes only the standard library and nyala/ headers.
#pragma once

#include <memory>
#include <ostream>
#include <string>
#include <string_view>

#include "nyala/export.h"

namespace nyala {

NYALA_EXPORT_BEGIN

class [[nodiscard]] Status {
 public:
  // Codes are stable: they travel in protobufs (common.proto AppStatusPB).
  enum Code : int {
    kOk = 0,
    kNotFound = 1,
    kCorruption = 2,
    kNotSupported = 3,
    kInvalidArgument = 4,
    kIOError = 5,
    kAlreadyPresent = 6,
    kRuntimeError = 7,
    kNetworkError = 8,
    kIllegalState = 9,
    kNotAuthorized = 10,
    kAborted = 11,
    kRemoteError = 12,
    kServiceUnavailable = 13,
    kTimedOut = 14,
    kUninitialized = 15,
    kConfigurationError = 16,
    kIncomplete = 17,
    kEndOfFile = 18,
    kCancelled = 19,
  };

  Status() noexcept = default;
  Status(const Status& s) : state_(s.state_ ? std::make_unique<State>(*s.state_) : nullptr) {}
  Status& operator=(const Status& s) {
    if (this != &s) state_ = s.state_ ? std::make_unique<State>(*s.state_) : nullptr;
    return *this;
  }
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;

  static Status OK() { return Status(); }
  // `msg2`, when given, is appended after ": " (e.g. the offending value).
#define NYALA_STATUS_FACTORY(name)                                                      \
  static Status name(std::string_view msg, std::string_view msg2 = {}, int posix = 0) { \
    return Status(k##name, msg, msg2, posix);                                           \
  }                                                                                     \
  bool Is##name() const { return code() == k##name; }
  NYALA_STATUS_FACTORY(NotFound)
  NYALA_STATUS_FACTORY(Corruption)
  NYALA_STATUS_FACTORY(NotSupported)
  NYALA_STATUS_FACTORY(InvalidArgument)
  NYALA_STATUS_FACTORY(IOError)
  NYALA_STATUS_FACTORY(AlreadyPresent)
  NYALA_STATUS_FACTORY(RuntimeError)
  NYALA_STATUS_FACTORY(NetworkError)
  NYALA_STATUS_FACTORY(IllegalState)
  NYALA_STATUS_FACTORY(NotAuthorized)
  NYALA_STATUS_FACTORY(Aborted)
  NYALA_STATUS_FACTORY(RemoteError)
  NYALA_STATUS_FACTORY(ServiceUnavailable)
  NYALA_STATUS_FACTORY(TimedOut)
  NYALA_STATUS_FACTORY(Uninitialized)
  NYALA_STATUS_FACTORY(ConfigurationError)
  NYALA_STATUS_FACTORY(Incomplete)
  NYALA_STATUS_FACTORY(EndOfFile)
  NYALA_STATUS_FACTORY(Cancelled)
#undef NYALA_STATUS_FACTORY

  // Builds a status from a code read off the wire; unknown codes become RuntimeError.
  static Status FromCode(int code, std::string_view msg, int posix = 0);

  bool ok() const { return state_ == nullptr; }
  Code code() const { return state_ ? state_->code : kOk; }
  // The message without the code name; empty when OK.
  const std::string& message() const;
  int posix_code() const { return state_ ? state_->posix : 0; }

  // "OK" or "<CodeName>: <message>".
  std::string ToString() const;
  static const char* CodeName(Code code);

  // A copy whose message is `context + ": " + message()`; OK stays OK.
  Status CloneAndPrepend(std::string_view context) const;

 private:
  struct State {
    Code code;
    int posix;
    std::string msg;
  };
  Status(Code code, std::string_view msg, std::string_view msg2, int posix);

  std::unique_ptr<State> state_;  // null means OK
};

inline std::ostream& operator<<(std::ostream& os, const Status& s) { return os << s.ToString(); }

NYALA_EXPORT_END

}  // namespace nyala

// Returns from the enclosing function if `expr` is not OK.
#define NYALA_RETURN_NOT_OK(expr) \
  do {                            \
    ::nyala::Status _s = (expr);  \
    if (!_s.ok()) [[unlikely]]    \
      return _s;                  \
  } while (0)
