#include "common/flag_tags.h"

#include <map>
#include <set>

namespace nyala {

namespace {
// Function-local: TAG_FLAG runs during static initialization, in any order.
std::map<std::string, std::set<std::string>>& Registry() {
  static auto* registry = new std::map<std::string, std::set<std::string>>();
  return *registry;
}
}  // namespace

bool RegisterFlagTag(const char* name, const char* tag) {
  Registry()[name].insert(tag);
  return true;
}

bool FlagHasTag(const std::string& name, const std::string& tag) {
  auto it = Registry().find(name);
  return it != Registry().end() && it->second.count(tag) > 0;
}

std::vector<std::string> GetFlagTags(const std::string& name) {
  auto it = Registry().find(name);
  if (it == Registry().end()) return {};
  return std::vector<std::string>(it->second.begin(), it->second.end());
}

}  // namespace nyala
