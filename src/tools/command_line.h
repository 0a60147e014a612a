// How `nyala` splits its command line into positional words (noun, verb, master
// addresses, table names, key values, JSON specs) and gflags.
//
// gflags cannot do it alone: it takes every word that starts with '-' for a flag, so the
// key -5 fails as "unknown command line flag '5'", and with remove_flags it moves the
// words after a `--` ahead of the positional words before it.
//
// The rules, for each word after the program name, in order:
//   1. Every word after the first `--` is positional (the `--` itself is dropped).
//   2. `--help`, `-help` and `-h` ask for help.
//   3. A word that starts with '-' and names a known flag is a flag: `-name`, `--name`,
//      `--name=value`, and `--noname` for a boolean. A non-boolean flag written without
//      '=' takes the next word as its value, as gflags does (`--format csv`).
//   4. Any other word that starts with "--" (and is not "--" itself) is an error: it is
//      most likely a mistyped flag (the error suggests the closest known one), and a
//      value that starts with "--" can follow `--`.
//   5. Any other word is positional, including words that start with a single '-' and
//      name no flag: negative numbers (`-5`, `-1.5e3`; no flag name starts with a
//      digit or '.'), strings such as `-dash`, and `-` alone.
// So `nyala table get M t -5 -dash` and `nyala table get M t -- -5 -dash` both look up
// the keys -5 and -dash; `--` is needed only for values that start with "--" or that
// spell a flag's name (`-- -format`).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/result.h"

namespace nyala::tools {

enum class FlagKind {
  kUnknown,
  kBool,   // takes no separate value word
  kValue,  // `--name value` takes the next word
};

// What the flag called `name` (no dashes, no "=value") is; "noname" of a boolean flag
// `name` is kBool.
using FlagLookup = std::function<FlagKind(const std::string& name)>;

// Looks `name` up among the flags linked into this binary (the gflags registry).
FlagKind LookUpGflag(const std::string& name);

// The known flag closest to the unknown `name` (no dashes, no "=value"), or "" when
// none is close (common/flag_util.h's ClosestGflag for the real registry).
using FlagSuggester = std::function<std::string(const std::string& name)>;

struct CommandLine {
  std::vector<std::string> positional;
  // Each flag as one word for gflags: "--name=value", "--name" or "--noname".
  std::vector<std::string> flags;
  bool help = false;
};

// Splits `words` (argv without the program name) by the rules above. InvalidArgument
// for rule 4, with "did you mean --x?" when `suggest` (optional) names a flag.
Result<CommandLine> SplitCommandLine(const std::vector<std::string>& words,
                                     const FlagLookup& lookup,
                                     const FlagSuggester& suggest = nullptr);

}  // namespace nyala::tools
