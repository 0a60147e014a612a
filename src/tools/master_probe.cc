#include "tools/master_probe.h"
#include "common/result.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "nyala/monotime.h"
#include "rpc/sockaddr.h"

namespace nyala::tools {

namespace {

constexpr uint16_t kDefaultMasterPort = 7051;  // as the client's

// "30 s", "1.5 s", "0.7 s".
std::string Seconds(int64_t ms) {
  char buf[32];
  if (ms % 1000 == 0) {
    snprintf(buf, sizeof(buf), "%lld s", static_cast<long long>(ms / 1000));
  } else {
    snprintf(buf, sizeof(buf), "%.3g s", double(ms) / 1000);
  }
  return buf;
}

std::string ErrnoText(int err) {
  std::string s = strerror(err);
  if (!s.empty()) s[0] = char(tolower(static_cast<unsigned char>(s[0])));
  return s;
}

}  // namespace

Result<std::vector<ProbeOutcome>> ProbeMasters(const std::string& masters, int timeout_ms) {
  ASSIGN_OR_RETURN(std::vector<rpc::HostPort> hps,
                   rpc::HostPort::ParseList(masters, kDefaultMasterPort));
  std::vector<ProbeOutcome> out;
  std::vector<int> fds;  // -1 once settled
  for (const rpc::HostPort& hp : hps) {
    ASSIGN_OR_RETURN(std::vector<rpc::Sockaddr> addrs, hp.Resolve());
    if (addrs.empty()) return Status::NetworkError("cannot resolve master", hp.ToString());
    const rpc::Sockaddr& addr = addrs.front();  // the one the client uses
    out.push_back({hp.ToString(), Status::OK()});
    int fd = socket(addr.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      out.back().status = Status::NetworkError(ErrnoText(errno));
      fds.push_back(-1);
      continue;
    }
    if (connect(fd, addr.addr(), addr.addrlen()) == 0) {
      close(fd);
      fd = -1;
    } else if (errno != EINPROGRESS) {
      out.back().status = Status::NetworkError(ErrnoText(errno));
      close(fd);
      fd = -1;
    }
    fds.push_back(fd);
  }
  const MonoTime deadline = MonoTime::Now() + MonoDelta::FromMilliseconds(timeout_ms);
  for (;;) {
    std::vector<pollfd> pfds;
    std::vector<size_t> which;
    for (size_t i = 0; i < fds.size(); i++) {
      if (fds[i] >= 0) {
        pfds.push_back({fds[i], POLLOUT, 0});
        which.push_back(i);
      }
    }
    if (pfds.empty()) break;
    const int64_t left_ms = (deadline - MonoTime::Now()).ToMilliseconds();
    if (left_ms <= 0) break;
    int n = poll(pfds.data(), pfds.size(), int(left_ms));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    for (size_t k = 0; k < pfds.size(); k++) {
      if (pfds[k].revents == 0) continue;
      const size_t i = which[k];
      int err = 0;
      socklen_t len = sizeof(err);
      if (getsockopt(fds[i], SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
      if (err != 0) out[i].status = Status::NetworkError(ErrnoText(err));
      close(fds[i]);
      fds[i] = -1;
    }
  }
  for (size_t i = 0; i < fds.size(); i++) {
    if (fds[i] < 0) continue;
    out[i].status = Status::TimedOut("no answer within " + Seconds(timeout_ms));
    close(fds[i]);
  }
  return out;
}

std::string UnreachableMastersNote(const std::vector<ProbeOutcome>& outcomes,
                                   int64_t rpc_timeout_ms) {
  std::string note;
  for (const ProbeOutcome& o : outcomes) {
    if (o.status.ok()) return "";
    note += (note.empty() ? "master " : "; master ") + o.address + ": " + o.status.message();
  }
  if (note.empty()) return "";
  return note + ", retrying until the " + Seconds(rpc_timeout_ms) +
         " timeout; --timeout_ms to change";
}

}  // namespace nyala::tools
