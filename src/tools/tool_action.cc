#include "tools/tool_action.h"

#include <gflags/gflags.h>
#include <unistd.h>

#include "tools/master_probe.h"

DEFINE_string(format, "table", "Output format: table (aligned, for people), csv or json.");
DEFINE_int64(timeout_ms, 30000, "Timeout of each operation against the cluster, in milliseconds.");

namespace nyala::tools {

std::vector<Action>& AllActions() {
  static std::vector<Action> actions;
  return actions;
}

int PrintError(const Status& s) {
  fprintf(stderr, "error: %s\n", s.ToString().c_str());
  return 1;
}

Result<std::shared_ptr<client::Client>> ConnectToCluster(const std::string& masters) {
  client::ClientBuilder b;
  b.master_server_addrs(SplitList(masters));
  b.default_rpc_timeout(MonoDelta::FromMilliseconds(FLAGS_timeout_ms));
  b.default_admin_operation_timeout(MonoDelta::FromMilliseconds(FLAGS_timeout_ms));
  b.num_reactors(1);
  auto c = b.Build();
  if (!c.ok()) return c.status().CloneAndPrepend("cannot reach the master at " + masters);
  if (StderrIsTerminal()) {  // say now why the first call may wait (master_probe.h)
    auto probe = ProbeMasters(masters, kProbeTimeoutMs);
    std::string note = probe.ok() ? UnreachableMastersNote(*probe, FLAGS_timeout_ms) : "";
    if (!note.empty()) fprintf(stderr, "%s\n", note.c_str());
  }
  return c;
}

Result<OutputFormat> OutputFormatFlag() { return ParseOutputFormat(FLAGS_format); }

std::vector<std::string> SplitList(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    std::string item =
        s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    while (!item.empty() && item.front() == ' ') item.erase(item.begin());
    while (!item.empty() && item.back() == ' ') item.pop_back();
    if (!item.empty()) out.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

bool StderrIsTerminal() { return isatty(STDERR_FILENO) != 0; }

}  // namespace nyala::tools
