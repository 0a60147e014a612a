// nyala: the command-line tool. Kudu-shaped: nyala <noun> <verb> <master_addresses> [args],
// with --help at every level.
#include <gflags/gflags.h>
#include <glog/logging.h>
#include <signal.h>

#include <cstdio>
#include <map>
#include <set>

#include "common/flag_util.h"
#include "common/version.h"
#include "tools/command_line.h"
#include "tools/tool_action.h"

using nyala::tools::Action;
using nyala::tools::AllActions;

namespace {

void PrintTopHelp() {
  printf(
      "Usage: nyala <noun> <verb> [args] [--flags]\n\n"
      "Operate a Nyala cluster. Master addresses are comma-separated host:port\n"
      "(port 7051 when omitted).\n\nNouns:\n");
  std::map<std::string, std::set<std::string>> nouns;
  for (const auto& a : AllActions()) nouns[a.noun].insert(a.verb);
  for (const auto& [noun, verbs] : nouns) {
    std::string v;
    for (const auto& verb : verbs) v += (v.empty() ? "" : " | ") + verb;
    printf("  %-9s %s\n", noun.c_str(), v.c_str());
  }
  printf(
      "\n--version prints the version.\nFlags may come anywhere. A word that starts with '-' is a value (a key such as -5\n"
      "or -dash, a table name) unless it names a flag; every word after '--' is a value.\n"
      "\nRun 'nyala <noun> --help' or 'nyala <noun> <verb> --help' for more.\n");
}

void PrintNounHelp(const std::string& noun) {
  printf("Usage: nyala %s <verb> [args] [--flags]\n\nVerbs:\n", noun.c_str());
  for (const auto& a : AllActions()) {
    if (a.noun == noun) printf("  %-12s %s\n", a.verb.c_str(), a.summary.c_str());
  }
}

void PrintActionHelp(const Action& a) {
  printf("Usage: nyala %s %s %s [--flags]\n\n%s\n", a.noun.c_str(), a.verb.c_str(),
         a.args_usage.c_str(), a.summary.c_str());
  if (!a.details.empty()) printf("\n%s\n", a.details.c_str());
  std::vector<std::string> flags = a.flags;
  flags.push_back("timeout_ms");
  printf("\nFlags:\n");
  for (const auto& f : flags) {
    gflags::CommandLineFlagInfo info;
    if (!gflags::GetCommandLineFlagInfo(f.c_str(), &info)) continue;
    printf("  --%s (default: %s)\n      %s\n", f.c_str(),
           info.default_value.empty() ? "\"\"" : info.default_value.c_str(),
           info.description.c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  signal(SIGPIPE, SIG_IGN);
  nyala::tools::RegisterClusterActions();
  nyala::tools::RegisterTableActions();
  nyala::tools::RegisterServerActions();
  nyala::tools::RegisterPerfActions();
  nyala::tools::RegisterTabletActions();
  nyala::tools::RegisterFlagActions();
  nyala::tools::RegisterTableStatisticsActions();
  nyala::tools::RegisterTableCopyActions();
  nyala::tools::RegisterTableAlterActions();
  nyala::tools::RegisterPerfTableScanActions();
  nyala::tools::RegisterReplicaActions();

  // Our own split of argv, not gflags': values that start with '-' (keys such as -5 or
  // -dash, table names) stay positional, and `--` keeps the order (command_line.h).
  std::vector<std::string> all(argv + 1, argv + argc);
  auto cl = nyala::tools::SplitCommandLine(all, nyala::tools::LookUpGflag, nyala::ClosestGflag);
  if (!cl.ok()) {
    fprintf(stderr, "error: %s\n", cl.status().message().c_str());
    return 2;
  }
  for (const std::string& f : cl->flags) {
    if (f == "--version" || f == "--version=true") {
      printf("nyala version %s\n", NYALA_VERSION_STRING);
      return 0;
    }
  }
  std::vector<std::string>& words = cl->positional;
  bool help = cl->help;
  // `nyala help` and `nyala <noun> help` (a key or table called "help" is a value).
  for (size_t i = 0; i < 2 && i < words.size();) {
    if (words[i] == "help") {
      help = true;
      words.erase(words.begin() + i);
    } else {
      i++;
    }
  }
  if (words.empty()) {
    PrintTopHelp();
    return help ? 0 : 2;
  }
  bool noun_known = false;
  for (const auto& a : AllActions()) noun_known |= a.noun == words[0];
  if (!noun_known) {
    fprintf(stderr, "error: unknown noun '%s'\n\n", words[0].c_str());
    PrintTopHelp();
    return 2;
  }
  if (words.size() < 2) {
    PrintNounHelp(words[0]);
    return help ? 0 : 2;
  }
  const Action* action = nullptr;
  for (const auto& a : AllActions()) {
    if (a.noun == words[0] && a.verb == words[1]) action = &a;
  }
  if (!action) {
    fprintf(stderr, "error: unknown verb '%s' for '%s'\n\n", words[1].c_str(), words[0].c_str());
    PrintNounHelp(words[0]);
    return 2;
  }
  if (help) {
    PrintActionHelp(*action);
    return 0;
  }
  gflags::SetUsageMessage("nyala <noun> <verb> [args]; run 'nyala --help'");
  // gflags sees only the flags, each as one "--name=value" word.
  std::vector<char*> flag_argv = {argv[0]};
  for (std::string& f : cl->flags) flag_argv.push_back(f.data());
  int flag_argc = int(flag_argv.size());
  char** flag_argv_ptr = flag_argv.data();
  gflags::ParseCommandLineFlags(&flag_argc, &flag_argv_ptr, true);
  FLAGS_logtostderr = true;
  FLAGS_minloglevel = 2;  // the client's warnings would garble the output; errors are reported
  google::InitGoogleLogging(argv[0]);
  const std::vector<std::string> args(words.begin() + 2, words.end());
  if (int(args.size()) < action->min_args ||
      (action->max_args >= 0 && int(args.size()) > action->max_args)) {
    fprintf(stderr, "error: wrong number of arguments\n\n");
    PrintActionHelp(*action);
    return 2;
  }
  if (action->run_with_exit_code) return action->run_with_exit_code(args);
  nyala::Status s = action->run(args);
  if (!s.ok()) return nyala::tools::PrintError(s);
  return 0;
}
