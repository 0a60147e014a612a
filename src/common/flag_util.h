// Helpers for command lines: the known flag closest to a mistyped one, for "unknown
// flag --frmat; did you mean --format?" in the CLI and the daemons.
//
// Thread-safety: the functions keep no state; ClosestGflag reads gflags' registry,
// which has its own lock.
#pragma once

#include <string>
#include <vector>

namespace nyala {

// Edits (insert, delete, replace one character, or swap two adjacent ones) that turn
// `a` into `b`.
int EditDistance(const std::string& a, const std::string& b);

// The candidate closest to `name` by EditDistance, if it is close enough to be what was
// meant (1 edit for names of up to 4 characters, 2 up to 8, 3 beyond); else the only
// candidate that starts with `name` (4 characters or more). "" when there is none.
// Ties go to the candidate listed first.
std::string ClosestName(const std::string& name, const std::vector<std::string>& candidates);

// ClosestName among the flags linked into this program, leaving out those tagged
// hidden (common/flag_tags.h). A "no" prefix (gflags' --noflag) is matched too.
std::string ClosestGflag(const std::string& name);

}  // namespace nyala
