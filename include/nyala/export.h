// What the shared client library (libnyala_client.so) exports. Everything Nyala builds
// has hidden visibility; the declarations between NYALA_EXPORT_BEGIN and
// NYALA_EXPORT_END in the public headers under nyala/ are the library's API and are
// exported, and NYALA_NO_EXPORT keeps a class declared there (an implementation's
// forward declaration) hidden.
#pragma once

#if defined(__GNUC__)
#define NYALA_EXPORT_BEGIN _Pragma("GCC visibility push(default)")
#define NYALA_EXPORT_END _Pragma("GCC visibility pop")
#define NYALA_NO_EXPORT __attribute__((visibility("hidden")))
#else
#define NYALA_EXPORT_BEGIN
#define NYALA_EXPORT_END
#define NYALA_NO_EXPORT
#endif
