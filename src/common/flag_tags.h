// Tags on gflags, after Kudu's util/flag_tags.h: a flag's tags say what may be done
// with it beyond setting it on the command line.
//
//   DEFINE_string(fault_injection_x, "", "...");
//   TAG_FLAG(fault_injection_x, runtime);
//
// Tags:
//   runtime  may be changed while the server runs (GenericService.SetFlag, see
//            server/generic_service.h, refuses every flag without it). The code that
//            reads the flag must cope with a change at any moment: read it once per
//            use, and never hold a reference into a string flag (gflags writes it in
//            place; a string flag publishes its parsed value from a validator instead).
//   unsafe   breaks a guarantee the system otherwise gives (fault injection for tests,
//            measuring flags that are not crash-safe). A daemon refuses to start with
//            one set away from its default unless --unlock_unsafe_flags is also given
//            (server::CheckUnsafeFlags); GetFlags lists the tag, so that a server
//            running with one stands out.
//   hidden   left out of the daemons' --help (test-only flags an operator has no use
//            for); gflags' --helpxml and GetFlags still list it.
//
// TAG_FLAG is used at namespace scope of the .cc that defines the flag, after its
// DEFINE_*; it registers at static initialization.
//
// Thread-safety: the registry is filled during static initialization and read only
// after main() starts.
#pragma once

#include <string>
#include <vector>

namespace nyala {

namespace flag_tags {
inline constexpr const char runtime[] = "runtime";
inline constexpr const char unsafe[] = "unsafe";
inline constexpr const char hidden[] = "hidden";
}  // namespace flag_tags

// Records that flag `name` carries `tag`; returns true (for the static registrar).
bool RegisterFlagTag(const char* name, const char* tag);
bool FlagHasTag(const std::string& name, const std::string& tag);
// The tags of flag `name`, sorted; empty for an untagged or unknown flag.
std::vector<std::string> GetFlagTags(const std::string& name);

}  // namespace nyala

// `&FLAGS_##name` makes a misspelt flag name a compile error.
#define TAG_FLAG(name, tag)                                          \
  static const bool nyala_flag_tag_##name##_##tag [[maybe_unused]] = \
      ((void)&FLAGS_##name, ::nyala::RegisterFlagTag(#name, ::nyala::flag_tags::tag))
