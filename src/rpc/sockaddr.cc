#include "rpc/sockaddr.h"
#include "common/result.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>

#include <algorithm>
#include <charconv>
#include <cstring>

namespace nyala::rpc {

Sockaddr::Sockaddr() : len_(sizeof(sockaddr_in)) {
  memset(&storage_, 0, sizeof(storage_));
  auto* in = reinterpret_cast<sockaddr_in*>(&storage_);
  in->sin_family = AF_INET;
}

Sockaddr::Sockaddr(const sockaddr* addr, socklen_t len) : len_(len) {
  memset(&storage_, 0, sizeof(storage_));
  memcpy(&storage_, addr, std::min<size_t>(len, sizeof(storage_)));
}

namespace {
Result<uint16_t> ParsePort(std::string_view s) {
  unsigned v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v > 65535 || s.empty()) {
    return Status::InvalidArgument("invalid port", std::string(s));
  }
  return uint16_t(v);
}

// Splits "host:port" / "[v6]:port" / "host"; `port` is empty when absent.
Status SplitHostPort(std::string_view s, std::string_view* host, std::string_view* port) {
  *port = {};
  if (!s.empty() && s.front() == '[') {
    size_t close = s.find(']');
    if (close == std::string_view::npos) return Status::InvalidArgument("unclosed '['", s);
    *host = s.substr(1, close - 1);
    std::string_view rest = s.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return Status::InvalidArgument("expected ':' after ']'", s);
      *port = rest.substr(1);
      if (port->empty()) return Status::InvalidArgument("empty port", s);
    }
    return Status::OK();
  }
  size_t colon = s.rfind(':');
  if (colon != std::string_view::npos && s.find(':') == colon) {
    *host = s.substr(0, colon);
    *port = s.substr(colon + 1);
    if (port->empty()) return Status::InvalidArgument("empty port", s);
  } else {
    *host = s;  // no port, or a bare IPv6 address
  }
  return Status::OK();
}
}  // namespace

Result<Sockaddr> Sockaddr::ParseNumeric(std::string_view s) {
  std::string_view host, port_str;
  RETURN_NOT_OK(SplitHostPort(s, &host, &port_str));
  uint16_t port = 0;
  if (!port_str.empty()) {
    ASSIGN_OR_RETURN(port, ParsePort(port_str));
  }
  std::string h(host);
  sockaddr_in in4{};
  if (inet_pton(AF_INET, h.c_str(), &in4.sin_addr) == 1) {
    in4.sin_family = AF_INET;
    in4.sin_port = htons(port);
    return Sockaddr(reinterpret_cast<sockaddr*>(&in4), sizeof(in4));
  }
  sockaddr_in6 in6{};
  if (inet_pton(AF_INET6, h.c_str(), &in6.sin6_addr) == 1) {
    in6.sin6_family = AF_INET6;
    in6.sin6_port = htons(port);
    return Sockaddr(reinterpret_cast<sockaddr*>(&in6), sizeof(in6));
  }
  return Status::InvalidArgument("not a numeric address", s);
}

Sockaddr Sockaddr::Loopback(uint16_t port) {
  sockaddr_in in4{};
  in4.sin_family = AF_INET;
  in4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  in4.sin_port = htons(port);
  return Sockaddr(reinterpret_cast<sockaddr*>(&in4), sizeof(in4));
}

uint16_t Sockaddr::port() const {
  if (family() == AF_INET6)
    return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage_)->sin6_port);
  return ntohs(reinterpret_cast<const sockaddr_in*>(&storage_)->sin_port);
}

void Sockaddr::set_port(uint16_t port) {
  if (family() == AF_INET6) {
    reinterpret_cast<sockaddr_in6*>(&storage_)->sin6_port = htons(port);
  } else {
    reinterpret_cast<sockaddr_in*>(&storage_)->sin_port = htons(port);
  }
}

bool Sockaddr::IsWildcard() const {
  if (family() == AF_INET6) {
    return IN6_IS_ADDR_UNSPECIFIED(&reinterpret_cast<const sockaddr_in6*>(&storage_)->sin6_addr);
  }
  return reinterpret_cast<const sockaddr_in*>(&storage_)->sin_addr.s_addr == htonl(INADDR_ANY);
}

bool Sockaddr::IsLoopback() const {
  if (family() == AF_INET6) {
    return IN6_IS_ADDR_LOOPBACK(&reinterpret_cast<const sockaddr_in6*>(&storage_)->sin6_addr);
  }
  return (ntohl(reinterpret_cast<const sockaddr_in*>(&storage_)->sin_addr.s_addr) >> 24) == 127;
}

std::string Sockaddr::host() const {
  char buf[INET6_ADDRSTRLEN] = "";
  if (family() == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&storage_)->sin6_addr, buf,
              sizeof(buf));
  } else {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&storage_)->sin_addr, buf,
              sizeof(buf));
  }
  return buf;
}

std::string Sockaddr::ToString() const {
  if (family() == AF_INET6) return "[" + host() + "]:" + std::to_string(port());
  return host() + ":" + std::to_string(port());
}

size_t Sockaddr::Hash() const {
  // Eight bytes at a time (an IPv4 address with its family and port is the first
  // eight): every outbound call hashes its remote address twice.
  uint64_t h = 1469598103934665603ull ^ len_;
  const auto* p = reinterpret_cast<const uint8_t*>(&storage_);
  for (socklen_t i = 0; i < len_; i += 8) {
    uint64_t word = 0;
    memcpy(&word, p + i, std::min<socklen_t>(8, len_ - i));
    h = (h ^ word) * 0x9e3779b97f4a7c15ull;
    h ^= h >> 29;
  }
  return h;
}

bool operator==(const Sockaddr& a, const Sockaddr& b) {
  return a.len_ == b.len_ && memcmp(&a.storage_, &b.storage_, a.len_) == 0;
}

Result<HostPort> HostPort::Parse(std::string_view s, uint16_t default_port) {
  std::string_view host, port_str;
  RETURN_NOT_OK(SplitHostPort(s, &host, &port_str));
  if (host.empty()) return Status::InvalidArgument("empty host", s);
  uint16_t port = default_port;
  if (!port_str.empty()) {
    ASSIGN_OR_RETURN(port, ParsePort(port_str));
  }
  return HostPort(std::string(host), port);
}

Result<std::vector<HostPort>> HostPort::ParseList(std::string_view s, uint16_t default_port) {
  std::vector<HostPort> out;
  while (!s.empty()) {
    size_t comma = s.find(',');
    std::string_view item = s.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (!item.empty()) {
      ASSIGN_OR_RETURN(HostPort hp, Parse(item, default_port));
      out.push_back(std::move(hp));
    }
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
  }
  if (out.empty()) return Status::InvalidArgument("no addresses given");
  return out;
}

Result<std::vector<Sockaddr>> HostPort::Resolve() const {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = getaddrinfo(host_.c_str(), nullptr, &hints, &res);
  if (rc != 0) {
    return Status::NetworkError("unable to resolve " + host_, gai_strerror(rc));
  }
  std::vector<Sockaddr> out;
  for (addrinfo* ai = res; ai; ai = ai->ai_next) {
    if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6) continue;
    Sockaddr a(ai->ai_addr, ai->ai_addrlen);
    a.set_port(port_);
    bool dup = false;
    for (const auto& o : out) dup |= (o == a);
    if (!dup) out.push_back(a);
  }
  freeaddrinfo(res);
  // Prefer IPv4: the daemons bind IPv4 by default.
  std::stable_partition(out.begin(), out.end(),
                        [](const Sockaddr& a) { return a.family() == AF_INET; });
  if (out.empty()) return Status::NetworkError("no addresses for " + host_);
  return out;
}

std::string HostPort::ToString() const {
  if (host_.find(':') != std::string::npos) return "[" + host_ + "]:" + std::to_string(port_);
  return host_ + ":" + std::to_string(port_);
}

std::string FirstNonLoopbackAddress() {
  ifaddrs* ifs = nullptr;
  std::string found = "127.0.0.1";
  if (getifaddrs(&ifs) != 0) return found;
  for (ifaddrs* i = ifs; i; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
    Sockaddr a(i->ifa_addr, sizeof(sockaddr_in));
    if (!a.IsLoopback()) {
      found = a.host();
      break;
    }
  }
  freeifaddrs(ifs);
  return found;
}

Result<Sockaddr> ResolveAddress(std::string_view host_port) {
  auto numeric = Sockaddr::ParseNumeric(host_port);
  if (numeric.ok()) return *numeric;
  ASSIGN_OR_RETURN(HostPort hp, HostPort::Parse(host_port, 0));
  ASSIGN_OR_RETURN(std::vector<Sockaddr> addrs, hp.Resolve());
  if (addrs.empty()) return Status::NetworkError("no address for " + std::string(host_port));
  return addrs[0];
}

}  // namespace nyala::rpc
