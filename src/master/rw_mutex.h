// RwMutex: std::shared_mutex with clang thread-safety annotations, and scoped
// shared/exclusive lockers for it. Readers share; a writer excludes all.
#pragma once

#include <shared_mutex>

#include "common/thread_annotations.h"

// Shared-capability annotations missing from common/thread_annotations.h.
#ifndef ACQUIRE_SHARED
#define ACQUIRE_SHARED(...) NYALA_TSA(acquire_shared_capability(__VA_ARGS__))
#endif
#ifndef RELEASE_SHARED
#define RELEASE_SHARED(...) NYALA_TSA(release_shared_capability(__VA_ARGS__))
#endif
#ifndef ACQUIRED_BEFORE
#define ACQUIRED_BEFORE(...) NYALA_TSA(acquired_before(__VA_ARGS__))
#endif
#ifndef REQUIRES_SHARED
#define REQUIRES_SHARED(...) NYALA_TSA(requires_shared_capability(__VA_ARGS__))
#endif

namespace nyala::master {

class CAPABILITY("mutex") RwMutex {
 public:
  void Lock() ACQUIRE() { mu_.lock(); }
  void Unlock() RELEASE() { mu_.unlock(); }
  void LockShared() ACQUIRE_SHARED() { mu_.lock_shared(); }
  void UnlockShared() RELEASE_SHARED() { mu_.unlock_shared(); }

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

}  // namespace nyala::master
