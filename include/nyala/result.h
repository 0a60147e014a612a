// Result<T>: either a value or a non-OK Status. Use it where a function has one
// value to hand back; use NYALA_ASSIGN_OR_RETURN to unwrap it.
//
//   Result<TabletId> FindTablet(Slice partition_key);
//   NYALA_ASSIGN_OR_RETURN(TabletId id, FindTablet(pkey));
//
// Part of the public client API: includes only the standard library and nyala/ headers.
#pragma once

#include <cassert>
#include <optional>
#include <utility>

#include "nyala/status.h"

namespace nyala {

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(const T& value) : value_(value) {}             // NOLINT(runtime/explicit)
  Result(T&& value) : value_(std::move(value)) {}       // NOLINT(runtime/explicit)
  Result(Status status) : status_(std::move(status)) {  // NOLINT(runtime/explicit)
    assert(!status_.ok() && "Result built from an OK status without a value");
    if (status_.ok()) status_ = Status::RuntimeError("Result built from OK status without value");
  }

  bool ok() const { return status_.ok(); }
  const Status& status() const& { return status_; }
  Status status() && { return std::move(status_); }

  // REQUIRES: ok().
  T& value() & {
    assert(ok() && "Result::value() of an error");
    return *value_;
  }
  const T& value() const& {
    assert(ok() && "Result::value() of an error");
    return *value_;
  }
  T&& value() && {
    assert(ok() && "Result::value() of an error");
    return std::move(*value_);
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace nyala

#define NYALA_CONCAT_INNER(a, b) a##b
#define NYALA_CONCAT(a, b) NYALA_CONCAT_INNER(a, b)
#define NYALA_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) [[unlikely]]                       \
    return std::move(tmp).status();                 \
  lhs = std::move(tmp).value()

// Evaluates `expr` (a Result); returns its status if not OK, else assigns the value to `lhs`.
#define NYALA_ASSIGN_OR_RETURN(lhs, expr) \
  NYALA_ASSIGN_OR_RETURN_IMPL(NYALA_CONCAT(_result_, __LINE__), lhs, expr)
