// The Status macros of Nyala's own code. Status itself is public (nyala/status.h);
// applications use its NYALA_-prefixed macros, the tree these short ones, and the
// ones that log or crash, which need glog.
#pragma once

#include <glog/logging.h>

#include "nyala/status.h"

// Returns from the enclosing function if `expr` is not OK.
#define RETURN_NOT_OK(expr) NYALA_RETURN_NOT_OK(expr)

// Like RETURN_NOT_OK, adding `msg` in front of the message.
#define RETURN_NOT_OK_PREPEND(expr, msg) \
  do {                                   \
    ::nyala::Status _s = (expr);         \
    if (!_s.ok()) [[unlikely]]           \
      return _s.CloneAndPrepend(msg);    \
  } while (0)

// Logs a warning if `expr` is not OK and carries on.
#define WARN_NOT_OK(expr, msg)                                    \
  do {                                                            \
    ::nyala::Status _s = (expr);                                  \
    if (!_s.ok()) LOG(WARNING) << (msg) << ": " << _s.ToString(); \
  } while (0)

// In debug builds, crashes if `expr` is not OK: an invariant the caller already
// checked (never a value that came off the wire). Not evaluated in release builds.
#ifndef NDEBUG
#define DCHECK_OK(expr) CHECK_OK(expr)
#else
#define DCHECK_OK(expr) \
  do {                  \
  } while (0)
#endif

// Crashes if `expr` is not OK: only for start-up failures with no way forward.
#define CHECK_OK(expr)               \
  do {                               \
    ::nyala::Status _s = (expr);     \
    CHECK(_s.ok()) << _s.ToString(); \
  } while (0)
