#include "server/server_base.h"
#include "common/result.h"

#include <gflags/gflags.h>
#include <glog/logging.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

#include "common/flag_tags.h"
#include "common/flag_util.h"
#include "common/version.h"
#include "server/generic_service.h"

DEFINE_string(rpc_bind_addresses, "0.0.0.0",
              "Comma-separated host:port addresses the RPC server binds. A missing port is "
              "the daemon's default (master 7051, tablet server 7050).");
DEFINE_string(rpc_advertised_addresses, "",
              "Comma-separated host:port addresses announced to clients and the master. "
              "Empty: the bound addresses, with a wildcard host replaced by this host's "
              "first non-loopback address.");
DEFINE_string(fs_data_dirs, "",
              "Comma-separated directories holding this server's data (created if missing).");
DEFINE_int32(webserver_port, 0,
             "Port of the web UI (master 8051, tablet server 8050); 0 picks a free port and "
             "logs it; -1 disables the web UI.");
DEFINE_string(server_dump_info_path, "",
              "After start-up, write this server's uuid and bound RPC and web addresses to this "
              "file (key=value lines); used by scripts and tests to find ports picked at run "
              "time.");
DEFINE_string(webserver_interface, "",
              "Address the web UI binds; empty: the host of the first RPC bind address.");
DEFINE_bool(unlock_unsafe_flags, false,
            "Lets the daemon start with flags tagged unsafe (test-only fault injection and "
            "measuring flags, which break a guarantee Nyala otherwise gives) set away from "
            "their defaults; without it the daemon refuses to start and names them.");

namespace nyala::server {

const char* const kNyalaVersion = NYALA_VERSION_STRING;

ServerBaseOptions ServerBaseOptions::FromFlags(const std::string& kind, uint16_t default_rpc_port) {
  ServerBaseOptions o;
  o.kind = kind;
  o.data_dirs = SplitCommaList(FLAGS_fs_data_dirs);
  o.rpc_bind_addresses = FLAGS_rpc_bind_addresses;
  o.rpc_advertised_addresses = FLAGS_rpc_advertised_addresses;
  o.webserver_interface = FLAGS_webserver_interface;
  o.webserver_port = FLAGS_webserver_port;
  o.default_rpc_port = default_rpc_port;
  return o;
}

ServerBase::ServerBase(ServerBaseOptions options) : options_(std::move(options)) {}

ServerBase::~ServerBase() { ServerBase::Shutdown(); }

Status ServerBase::Init() {
  ASSIGN_OR_RETURN(fs_, FsManager::Open(options_.data_dirs, options_.kind));
  LOG(INFO) << "nyala-" << options_.kind << " " << kNyalaVersion << " uuid " << fs_->uuid()
            << (fs_->created() ? " (new)" : "") << ", data in " << fs_->data_dirs()[0];
  rpc::MessengerOptions mo;
  mo.name = options_.kind;
  mo.num_reactors = options_.num_reactors;
  mo.metrics = &metrics_;
  RegisterProcessMetrics(&metrics_);
  ASSIGN_OR_RETURN(messenger_, rpc::Messenger::Create(mo));
  // Flags read and changed at run time (tests' fault injection): one thread is plenty.
  return messenger_->RegisterService(std::make_unique<GenericServiceImpl>(), 1, 50);
}

Status ServerBase::Start() {
  ASSIGN_OR_RETURN(
      auto binds, rpc::HostPort::ParseList(options_.rpc_bind_addresses, options_.default_rpc_port));
  for (const auto& hp : binds) {
    ASSIGN_OR_RETURN(auto addrs, hp.Resolve());
    rpc::Sockaddr bound;
    RETURN_NOT_OK_PREPEND(messenger_->AddListener(addrs[0], &bound),
                          "--rpc_bind_addresses=" + options_.rpc_bind_addresses);
    bound_rpc_.push_back(bound);
  }
  rates_ = std::make_unique<RateHistory>();
  AddRateSeries(rates_.get());
  rates_->AddSeries("bytes_in", "RPC bytes in", "B/s",
                    [this] { return metrics_.SumOfFamily("rpc_bytes_received_total"); });
  rates_->AddSeries("bytes_out", "RPC bytes out", "B/s",
                    [this] { return metrics_.SumOfFamily("rpc_bytes_sent_total"); });
  rates_->Start();
  if (options_.webserver_port >= 0) {
    webserver_ = std::make_unique<Webserver>("nyala-" + options_.kind);
    RegisterDefaultPages();
    RegisterWebPages();
    std::string host =
        options_.webserver_interface.empty() ? bound_rpc_[0].host() : options_.webserver_interface;
    RETURN_NOT_OK(webserver_->Start(host, options_.webserver_port));
    LOG(INFO) << "web UI at http://" << (host == "0.0.0.0" ? rpc::FirstNonLoopbackAddress() : host)
              << ":" << webserver_->port() << "/";
  }
  start_time_ = MonoTime::Now();
  start_wall_micros_ = GetWallTimeMicros();
  if (!FLAGS_server_dump_info_path.empty())
    RETURN_NOT_OK(DumpServerInfo(FLAGS_server_dump_info_path));
  return Status::OK();
}

Status ServerBase::DumpServerInfo(const std::string& path) const {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << "uuid=" << uuid() << "\n";
    out << "pid=" << getpid() << "\n";
    for (const auto& a : bound_rpc_) out << "rpc=" << a.ToString() << "\n";
    if (webserver_) out << "http_port=" << webserver_->port() << "\n";
    if (!out) return Status::IOError("cannot write " + tmp);
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    return Status::IOError("cannot write --server_dump_info_path " + path, strerror(errno), errno);
  }
  return Status::OK();
}

void ServerBase::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  if (webserver_) webserver_->Shutdown();
  if (rates_) rates_->Shutdown();
  if (messenger_) messenger_->Shutdown();
}

std::vector<rpc::HostPort> ServerBase::advertised_rpc_addresses() const {
  if (!options_.rpc_advertised_addresses.empty()) {
    auto r = rpc::HostPort::ParseList(options_.rpc_advertised_addresses, options_.default_rpc_port);
    if (r.ok()) return *r;
    LOG(WARNING) << "bad --rpc_advertised_addresses: " << r.status().ToString();
  }
  std::vector<rpc::HostPort> out;
  for (const auto& a : bound_rpc_) {
    out.emplace_back(a.IsWildcard() ? rpc::FirstNonLoopbackAddress() : a.host(), a.port());
  }
  return out;
}

std::vector<rpc::HostPort> ServerBase::http_addresses() const {
  if (!webserver_) return {};
  std::string host =
      options_.webserver_interface.empty() ? bound_rpc_[0].host() : options_.webserver_interface;
  if (host == "0.0.0.0") host = rpc::FirstNonLoopbackAddress();
  return {rpc::HostPort(host, uint16_t(webserver_->port()))};
}

namespace {
std::string FormatDuration(MonoDelta d) {
  int64_t s = d.ToMilliseconds() / 1000;
  char buf[64];
  snprintf(buf, sizeof(buf), "%lldd %02lld:%02lld:%02lld", (long long)(s / 86400),
           (long long)(s / 3600 % 24), (long long)(s / 60 % 60), (long long)(s % 60));
  return buf;
}
}  // namespace

void ServerBase::RegisterDefaultPages() {
  webserver_->RegisterPage("/", "Home", [this](const WebRequest&, WebResponse* resp) {
    std::vector<std::pair<std::string, std::string>> rows;
    rows.emplace_back("Version", kNyalaVersion);
    rows.emplace_back("UUID", uuid());
    rows.emplace_back("Uptime", FormatDuration(MonoTime::Now() - start_time_));
    std::string rpc;
    for (const auto& hp : advertised_rpc_addresses()) rpc += hp.ToString() + " ";
    rows.emplace_back("RPC addresses", EscapeHtml(rpc));
    rows.emplace_back("Data directories", EscapeHtml(FLAGS_fs_data_dirs));
    AddOverviewRows(&rows);
    std::string& b = resp->body;
    b += "<h2>nyala-" + options_.kind + "</h2><table>";
    for (const auto& [k, v] : rows)
      b += "<tr><th>" + EscapeHtml(k) + "</th><td>" + v + "</td></tr>";
    b += "</table>";
    b += rates_->ChartsHtml("/rates.json");
  });
  // The recent rates the home page charts (RateHistory::ToJson).
  webserver_->RegisterRaw("/rates.json", [this](const WebRequest&, WebResponse* resp) {
    resp->content_type = "application/json";
    resp->body = rates_->ToJson();
  });
  webserver_->RegisterRaw("/healthz", [](const WebRequest&, WebResponse* resp) {
    resp->content_type = "text/plain";
    resp->body = "OK";
  });
  webserver_->RegisterPage("/varz", "Flags", [](const WebRequest& req, WebResponse* resp) {
    std::vector<gflags::CommandLineFlagInfo> flags;
    gflags::GetAllFlags(&flags);
    if (req.GetArg("raw") == "true") {
      resp->content_type = "text/plain";
      for (const auto& f : flags) resp->body += "--" + f.name + "=" + f.current_value + "\n";
      return;
    }
    std::string& b = resp->body;
    b += "<h2>Flags</h2><table><tr><th>Flag</th><th>Value</th><th>Default</th><th>Description</"
         "th></tr>";
    for (const auto& f : flags) {
      const bool is_default = f.current_value == f.default_value;
      b += std::string("<tr") + (is_default ? "" : " style=\"background:#fff8dc\"") + "><td>" +
           EscapeHtml(f.name) + "</td><td>" + EscapeHtml(f.current_value) + "</td><td>" +
           EscapeHtml(f.default_value) + "</td><td>" + EscapeHtml(f.description) + "</td></tr>";
    }
    b += "</table>";
  });
  webserver_->RegisterRaw("/metrics", [this](const WebRequest& req, WebResponse* resp) {
    resp->content_type = "application/json";
    resp->body = metrics_.ToJson(req.GetArg("metrics", req.GetArg("name")));
  });
  webserver_->RegisterRaw("/metrics_prometheus", [this](const WebRequest&, WebResponse* resp) {
    resp->content_type = "text/plain; version=0.0.4; charset=utf-8";
    resp->body = metrics_.ToPrometheusText();
  });
  webserver_->RegisterPage("/rpcz", "RPCs", [this](const WebRequest&, WebResponse* resp) {
    std::string& b = resp->body;
    b += "<h2>RPCs</h2><p>Open connections: " + std::to_string(messenger_->num_connections()) +
         "</p><h3>Service queues</h3><table><tr><th>Service</th><th>Calls queued</th></tr>";
    for (const auto& [service, queued] : messenger_->ServiceQueueSizes()) {
      b += "<tr><td>" + EscapeHtml(service) + "</td><td>" + std::to_string(queued) + "</td></tr>";
    }
    const std::vector<rpc::RunningCallInfo> calls = messenger_->DumpRunningCalls();
    b += "</table><h3>Calls in flight (" + std::to_string(calls.size()) +
         ", longest first)</h3><table><tr><th>Direction</th><th>Method</th><th>Peer</th>"
         "<th>Call id</th><th>State</th><th>Elapsed (ms)</th></tr>";
    for (const auto& c : calls) {
      b += std::string("<tr><td>") + (c.inbound ? "inbound" : "outbound") + "</td><td>" +
           EscapeHtml(c.service + "." + c.method) + "</td><td>" + EscapeHtml(c.remote) +
           "</td><td>" + std::to_string(c.call_id) + "</td><td>" + EscapeHtml(c.state) +
           "</td><td>" + std::to_string(c.elapsed.ToMilliseconds()) + "</td></tr>";
    }
    b += "</table>";
  });
}

void BlockTerminationSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

int WaitForTerminationSignal() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  int sig = 0;
  sigwait(&set, &sig);
  return sig;
}

namespace {
// The end of an unknown-flag error: the flag meant (`guess`, if any), and --help.
std::string SeeHelp(const std::string& guess) {
  if (guess.empty()) return "see --help for the flags this program takes";
  return "did you mean --" + guess + "? See --help for the flags this program takes";
}

// Returns the flag names set in `path` (a gflags flagfile), following nested flagfiles.
void CheckFlagfile(const std::string& path, int depth) {
  std::ifstream in(path);
  if (!in) {
    fprintf(stderr, "error: cannot read flagfile %s\n", path.c_str());
    exit(1);
  }
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    lineno++;
    size_t b = line.find_first_not_of(" \t");
    if (b == std::string::npos || line[b] == '#') continue;
    line = line.substr(b);
    if (line.rfind("--", 0) != 0 && line.rfind("-", 0) != 0) continue;  // gflags ignores these
    std::string name = line.substr(line[1] == '-' ? 2 : 1);
    name = name.substr(0, name.find('='));
    while (!name.empty() && (name.back() == ' ' || name.back() == '\r')) name.pop_back();
    std::string value = line.find('=') == std::string::npos ? "" : line.substr(line.find('=') + 1);
    if (name == "flagfile") {
      if (depth < 8) CheckFlagfile(value, depth + 1);
      continue;
    }
    gflags::CommandLineFlagInfo info;
    std::string bare = name.rfind("no", 0) == 0 ? name.substr(2) : name;
    if (!gflags::GetCommandLineFlagInfo(name.c_str(), &info) &&
        !gflags::GetCommandLineFlagInfo(bare.c_str(), &info)) {
      const std::string guess = ClosestGflag(name);
      fprintf(stderr, "error: unknown flag --%s in flagfile %s (line %d); %s\n", name.c_str(),
              path.c_str(), lineno, SeeHelp(guess).c_str());
      exit(1);
    }
  }
}

// Exits with "unknown flag --x; did you mean --y?" for the first word of the command
// line that names no flag, as gflags would without the suggestion. Words after "--"
// and a non-boolean flag's value given as the next word are skipped. Left to gflags
// when --undefok is used.
void CheckCommandLineFlagNames(int argc, char** argv) {
  for (int i = 1; i < argc; i++) {
    const std::string a = argv[i];
    if (a.rfind("--undefok", 0) == 0 || a.rfind("-undefok", 0) == 0) return;
  }
  for (int i = 1; i < argc; i++) {
    const std::string a = argv[i];
    if (a == "--") break;
    if (a.size() < 2 || a[0] != '-') continue;
    const std::string body = a.substr(a[1] == '-' ? 2 : 1);
    const size_t eq = body.find('=');
    const std::string name = body.substr(0, eq);
    gflags::CommandLineFlagInfo info;
    if (gflags::GetCommandLineFlagInfo(name.c_str(), &info)) {
      if (info.type != "bool" && eq == std::string::npos) i++;  // `--flag value`
      continue;
    }
    if (name.rfind("no", 0) == 0 && gflags::GetCommandLineFlagInfo(name.c_str() + 2, &info) &&
        info.type == "bool") {
      continue;
    }
    const std::string guess = ClosestGflag(name);
    fprintf(stderr, "error: unknown flag --%s; %s\n", name.c_str(), SeeHelp(guess).c_str());
    exit(1);
  }
}

// The group a flag is listed under in --help: the module that defines it
// ("master", "rpc", ...; "logging" for glog's, "command-line parsing" for gflags'), never a
// source path, which means nothing to someone who has only the binary.
std::string FlagGroup(const std::string& file) {
  if (file.find("gflags") != std::string::npos) return "command-line parsing";
  const size_t src = file.rfind("src/");
  if (src == std::string::npos) return "other";
  std::string rest = file.substr(src + 4);
  const size_t slash = rest.find('/');
  if (slash == std::string::npos) return "logging";  // glog's src/logging.cc etc.
  return rest.substr(0, slash);
}

// The program's name without its directory: "nyala-master".
std::string ProgramName(const char* argv0) {
  const std::string path = argv0;
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// The group of the daemon's own flags, from the program's name: "master" for
// nyala-master, "tserver" for nyala-tserver.
std::string OwnFlagGroup(const char* argv0) {
  std::string name = ProgramName(argv0);
  if (name.rfind("nyala-", 0) == 0) name = name.substr(6);
  return name;
}

// --help / --helpfull: the usage, then every flag by group and name, with its
// description and default; flags tagged hidden are left out. The daemon's own group
// comes first, then the shared daemon flags ("server"), the other modules, and last
// glog's and gflags' own. With `short_help` (--helpshort), only the first two groups.
// A flag tagged runtime is marked " [runtime]" (set_flag can change it).
void PrintHelp(const char* usage, const std::string& own_group, bool short_help) {
  std::vector<gflags::CommandLineFlagInfo> flags;
  gflags::GetAllFlags(&flags);
  std::map<std::string, std::vector<const gflags::CommandLineFlagInfo*>> groups;
  for (const auto& f : flags) {
    if (FlagHasTag(f.name, flag_tags::hidden)) continue;
    groups[FlagGroup(f.filename)].push_back(&f);
  }
  auto rank = [&](const std::string& group) {
    if (group == own_group) return 0;
    if (group == "server") return 1;
    if (group == "logging") return 3;
    if (group == "command-line parsing") return 4;
    return 2;
  };
  std::vector<std::string> order;
  for (const auto& [group, list] : groups) order.push_back(group);
  std::stable_sort(order.begin(), order.end(),
                   [&](const auto& a, const auto& b) { return rank(a) < rank(b); });
  printf("%s\n", usage);
  for (const std::string& group : order) {
    if (short_help && rank(group) > 1) continue;
    auto& list = groups[group];
    std::sort(list.begin(), list.end(), [](auto* a, auto* b) { return a->name < b->name; });
    printf("\nFlags of %s:\n", group.c_str());
    for (const auto* f : list) {
      printf("  --%s (%s, default: %s)%s\n      %s\n", f->name.c_str(), f->type.c_str(),
             f->default_value.empty() ? "\"\"" : f->default_value.c_str(),
             FlagHasTag(f->name, flag_tags::runtime) ? " [runtime]" : "",
             f->description.c_str());
    }
  }
  printf(short_help ? "\nThe main flags only; --help lists every flag.\n"
                    : "\n[runtime]: can be changed while the daemon runs "
                      "(nyala <master|tserver> set_flag).\n");
}

}  // namespace

std::vector<std::string> UnsafeFlagsSet() {
  std::vector<gflags::CommandLineFlagInfo> flags;
  gflags::GetAllFlags(&flags);  // sorted by name
  std::vector<std::string> set;
  for (const auto& f : flags) {
    if (FlagHasTag(f.name, flag_tags::unsafe) && f.current_value != f.default_value) {
      set.push_back("--" + f.name + "=" + f.current_value);
    }
  }
  return set;
}

Status CheckUnsafeFlags() {
  const std::vector<std::string> set = UnsafeFlagsSet();
  if (set.empty() || FLAGS_unlock_unsafe_flags) return Status::OK();
  std::string list;
  for (const auto& f : set) list += (list.empty() ? "" : ", ") + f;
  return Status::InvalidArgument(
      "unsafe flag(s) set: " + list +
      ". They are for tests and break a guarantee Nyala otherwise gives; add "
      "--unlock_unsafe_flags to start anyway");
}

void ParseFlagsAndInitLogging(int* argc, char*** argv, const char* usage) {
  gflags::SetUsageMessage(usage);
  gflags::SetVersionString(kNyalaVersion);
  for (int i = 1; i < *argc; i++) {
    std::string a = (*argv)[i];
    if (a.rfind("--flagfile=", 0) == 0) CheckFlagfile(a.substr(11), 0);
    if (a.rfind("-flagfile=", 0) == 0) CheckFlagfile(a.substr(10), 0);
  }
  // gflags' own --help lists flags under their source files' paths, and its
  // --helpshort those of a source file named after the program (none here): print ours.
  const std::string own_group = OwnFlagGroup((*argv)[0]);
  for (int i = 1; i < *argc; i++) {
    const std::string a = (*argv)[i];
    if (a == "--help" || a == "-help" || a == "--helpfull" || a == "-helpfull") {
      PrintHelp(usage, own_group, /*short_help=*/false);
      exit(0);
    }
    if (a == "--helpshort" || a == "-helpshort") {
      PrintHelp(usage, own_group, /*short_help=*/true);
      exit(0);
    }
    // gflags' --version would add "Debug build" lines in some builds; one line here.
    if (a == "--version" || a == "-version") {
      printf("%s version %s\n", ProgramName((*argv)[0]).c_str(), kNyalaVersion);
      exit(0);
    }
  }
  CheckCommandLineFlagNames(*argc, *argv);
  gflags::ParseCommandLineFlags(argc, argv, true);
  if (FLAGS_log_dir.empty()) FLAGS_logtostderr = true;
  if (Status s = CheckUnsafeFlags(); !s.ok()) {
    fprintf(stderr, "error: %s\n", s.message().c_str());
    exit(1);
  }
  google::InitGoogleLogging((*argv)[0]);
  // A crash (SIGSEGV, SIGABRT, ...) prints the signal and a stack trace before dying.
  google::InstallFailureSignalHandler();
  for (const auto& f : UnsafeFlagsSet()) {
    LOG(WARNING) << "unsafe flag " << f << " set (allowed by --unlock_unsafe_flags)";
  }
}

}  // namespace nyala::server
