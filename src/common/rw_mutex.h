// RwMutex: std::shared_mutex with clang thread-safety annotations, and scoped
// exclusive and shared lockers for it. Readers share; a writer excludes all. State
// marked GUARDED_BY(mu) may be read under either lock and written only exclusively.
#pragma once

#include <shared_mutex>

#include "common/thread_annotations.h"

namespace nyala {

class CAPABILITY("mutex") RwMutex {
 public:
  void Lock() ACQUIRE() { mu_.lock(); }
  void Unlock() RELEASE() { mu_.unlock(); }
  void LockShared() ACQUIRE_SHARED() { mu_.lock_shared(); }
  void UnlockShared() RELEASE_SHARED() { mu_.unlock_shared(); }
  bool TryLockShared() TRY_ACQUIRE_SHARED(true) { return mu_.try_lock_shared(); }

 private:
  std::shared_mutex mu_;
};

class SCOPED_CAPABILITY ExclusiveLock {
 public:
  explicit ExclusiveLock(RwMutex& mu) ACQUIRE(mu) : mu_(mu) { mu_.Lock(); }
  ~ExclusiveLock() RELEASE() { mu_.Unlock(); }
  ExclusiveLock(const ExclusiveLock&) = delete;
  ExclusiveLock& operator=(const ExclusiveLock&) = delete;

 private:
  RwMutex& mu_;
};

class SCOPED_CAPABILITY SharedLock {
 public:
  explicit SharedLock(RwMutex& mu) ACQUIRE_SHARED(mu) : mu_(mu) { mu_.LockShared(); }
  ~SharedLock() RELEASE() { mu_.UnlockShared(); }
  SharedLock(const SharedLock&) = delete;
  SharedLock& operator=(const SharedLock&) = delete;

 private:
  RwMutex& mu_;
};

}  // namespace nyala
