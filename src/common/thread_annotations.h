// Clang thread-safety annotations; no-ops on other compilers. scripts/check.sh
// compiles src/ with clang -Wthread-safety -Werror, so these are checked in CI.
//
// A member written under a mutex is GUARDED_BY it (PT_GUARDED_BY for what a pointer
// member points to); a helper called with the lock held is REQUIRES (REQUIRES_SHARED
// for a reader lock); a public method that takes the lock itself may say EXCLUDES, so
// calling it with the lock held is flagged.
#pragma once

#if defined(__clang__)
#define NYALA_TSA(x) __attribute__((x))
#else
#define NYALA_TSA(x)
#endif

#define CAPABILITY(x) NYALA_TSA(capability(x))
#define SCOPED_CAPABILITY NYALA_TSA(scoped_lockable)
#define GUARDED_BY(x) NYALA_TSA(guarded_by(x))
#define PT_GUARDED_BY(x) NYALA_TSA(pt_guarded_by(x))
#define ACQUIRED_BEFORE(...) NYALA_TSA(acquired_before(__VA_ARGS__))
#define ACQUIRED_AFTER(...) NYALA_TSA(acquired_after(__VA_ARGS__))
#define REQUIRES(...) NYALA_TSA(requires_capability(__VA_ARGS__))
#define REQUIRES_SHARED(...) NYALA_TSA(requires_shared_capability(__VA_ARGS__))
#define ACQUIRE(...) NYALA_TSA(acquire_capability(__VA_ARGS__))
#define ACQUIRE_SHARED(...) NYALA_TSA(acquire_shared_capability(__VA_ARGS__))
#define RELEASE(...) NYALA_TSA(release_capability(__VA_ARGS__))
#define RELEASE_SHARED(...) NYALA_TSA(release_shared_capability(__VA_ARGS__))
#define RELEASE_GENERIC(...) NYALA_TSA(release_generic_capability(__VA_ARGS__))
#define TRY_ACQUIRE(...) NYALA_TSA(try_acquire_capability(__VA_ARGS__))
#define TRY_ACQUIRE_SHARED(...) NYALA_TSA(try_acquire_shared_capability(__VA_ARGS__))
#define EXCLUDES(...) NYALA_TSA(locks_excluded(__VA_ARGS__))
#define ASSERT_CAPABILITY(x) NYALA_TSA(assert_capability(x))
#define ASSERT_SHARED_CAPABILITY(x) NYALA_TSA(assert_shared_capability(x))
#define RETURN_CAPABILITY(x) NYALA_TSA(lock_returned(x))
#define NO_THREAD_SAFETY_ANALYSIS NYALA_TSA(no_thread_safety_analysis)
