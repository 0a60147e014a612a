// ErrorCollector: a session's failed writes until the application fetches them.
// Keeps at most kMaxErrors; later ones are dropped and `overflowed` is reported.
// Thread-safe.
#pragma once

#include <memory>
#include <vector>

#include "common/mutex.h"
#include "nyala/client.h"

namespace nyala::client::internal {

class ErrorCollector {
 public:
  static constexpr size_t kMaxErrors = 10000;

  // `op` may be null only when full().
  void Add(std::unique_ptr<WriteOperation> op, Status status) {
    MutexLock l(mu_);
    if (errors_.size() >= kMaxErrors || !op) {
      overflowed_ = true;
      return;
    }
    errors_.push_back(std::make_unique<WriteError>(std::move(op), std::move(status)));
  }
  // Whether the next Add would be dropped.
  bool full() const {
    MutexLock l(mu_);
    return errors_.size() >= kMaxErrors;
  }
  int Count() const {
    MutexLock l(mu_);
    return static_cast<int>(errors_.size());
  }
  void Take(std::vector<std::unique_ptr<WriteError>>* out, bool* overflowed) {
    MutexLock l(mu_);
    for (auto& e : errors_) out->push_back(std::move(e));
    errors_.clear();
    if (overflowed) *overflowed = overflowed_;
    overflowed_ = false;
  }

 private:
  mutable Mutex mu_;
  std::vector<std::unique_ptr<WriteError>> errors_ GUARDED_BY(mu_);
  bool overflowed_ GUARDED_BY(mu_) = false;
};

}  // namespace nyala::client::internal
