#include "common/flag_util.h"

#include <gflags/gflags.h>

#include <algorithm>

#include "common/flag_tags.h"

namespace nyala {

int EditDistance(const std::string& a, const std::string& b) {
  // Optimal string alignment: Levenshtein plus adjacent transpositions.
  const size_t n = a.size(), m = b.size();
  std::vector<std::vector<int>> d(n + 1, std::vector<int>(m + 1));
  for (size_t i = 0; i <= n; i++) d[i][0] = int(i);
  for (size_t j = 0; j <= m; j++) d[0][j] = int(j);
  for (size_t i = 1; i <= n; i++) {
    for (size_t j = 1; j <= m; j++) {
      const int cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[n][m];
}

std::string ClosestName(const std::string& name, const std::vector<std::string>& candidates) {
  const int allowed = name.size() <= 4 ? 1 : name.size() <= 8 ? 2 : 3;
  std::string best;
  int best_distance = allowed + 1;
  for (const auto& c : candidates) {
    const int d = EditDistance(name, c);
    if (d < best_distance) {
      best = c;
      best_distance = d;
    }
  }
  if (!best.empty() || name.size() < 4) return best;
  std::string prefixed;
  for (const auto& c : candidates) {
    if (c.compare(0, name.size(), name) != 0) continue;
    if (!prefixed.empty()) return "";  // more than one: no guess
    prefixed = c;
  }
  return prefixed;
}

std::string ClosestGflag(const std::string& name) {
  std::vector<gflags::CommandLineFlagInfo> flags;
  gflags::GetAllFlags(&flags);
  std::vector<std::string> names;
  for (const auto& f : flags) {
    if (FlagHasTag(f.name, flag_tags::hidden)) continue;
    names.push_back(f.name);
    if (f.type == "bool") names.push_back("no" + f.name);
  }
  return ClosestName(name, names);
}

}  // namespace nyala
