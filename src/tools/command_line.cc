#include "tools/command_line.h"

#include <gflags/gflags.h>

namespace nyala::tools {

FlagKind LookUpGflag(const std::string& name) {
  gflags::CommandLineFlagInfo info;
  if (gflags::GetCommandLineFlagInfo(name.c_str(), &info)) {
    return info.type == "bool" ? FlagKind::kBool : FlagKind::kValue;
  }
  if (name.size() > 2 && name.compare(0, 2, "no") == 0 &&
      gflags::GetCommandLineFlagInfo(name.c_str() + 2, &info) && info.type == "bool") {
    return FlagKind::kBool;
  }
  return FlagKind::kUnknown;
}

Result<CommandLine> SplitCommandLine(const std::vector<std::string>& words,
                                     const FlagLookup& lookup, const FlagSuggester& suggest) {
  CommandLine out;
  for (size_t i = 0; i < words.size(); i++) {
    const std::string& w = words[i];
    if (w == "--") {
      out.positional.insert(out.positional.end(), words.begin() + i + 1, words.end());
      break;
    }
    if (w == "--help" || w == "-help" || w == "-h") {
      out.help = true;
      continue;
    }
    if (w.size() < 2 || w[0] != '-') {
      out.positional.push_back(w);
      continue;
    }
    const bool two_dashes = w[1] == '-';
    const std::string body = w.substr(two_dashes ? 2 : 1);
    const size_t eq = body.find('=');
    const std::string name = body.substr(0, eq);
    const FlagKind kind = name.empty() ? FlagKind::kUnknown : lookup(name);
    if (kind == FlagKind::kUnknown) {
      if (two_dashes) {
        const std::string guess = suggest && !name.empty() ? suggest(name) : "";
        return Status::InvalidArgument(
            "unknown flag --" + name + (guess.empty() ? "" : "; did you mean --" + guess + "?") +
            " (a value that starts with '--' goes after a '--' word: nyala ... -- " + w + ")");
      }
      out.positional.push_back(w);
      continue;
    }
    if (eq != std::string::npos || kind == FlagKind::kBool || i + 1 == words.size()) {
      // A value-taking flag at the very end is passed as is: gflags reports that it is
      // missing its argument.
      out.flags.push_back("--" + body);
    } else {
      out.flags.push_back("--" + name + "=" + words[++i]);
    }
  }
  return out;
}

}  // namespace nyala::tools
