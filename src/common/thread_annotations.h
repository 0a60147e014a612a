// Clang thread-safety annotations; no-ops on other compilers.
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
#define REQUIRES(...) NYALA_TSA(requires_capability(__VA_ARGS__))
#define ACQUIRE(...) NYALA_TSA(acquire_capability(__VA_ARGS__))
#define RELEASE(...) NYALA_TSA(release_capability(__VA_ARGS__))
#define TRY_ACQUIRE(...) NYALA_TSA(try_acquire_capability(__VA_ARGS__))
#define EXCLUDES(...) NYALA_TSA(locks_excluded(__VA_ARGS__))
#define NO_THREAD_SAFETY_ANALYSIS NYALA_TSA(no_thread_safety_analysis)
