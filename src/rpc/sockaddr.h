// Network addresses: HostPort (a name and a port, as users write them) and Sockaddr
// (a resolved IPv4/IPv6 socket address). Values; thread-compatible.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/status.h"

namespace nyala::rpc {

class Sockaddr {
 public:
  Sockaddr();
  Sockaddr(const sockaddr* addr, socklen_t len);

  // Parses a numeric "a.b.c.d:port" or "[v6]:port" without DNS.
  static Result<Sockaddr> ParseNumeric(std::string_view s);
  static Sockaddr Loopback(uint16_t port);

  const sockaddr* addr() const { return reinterpret_cast<const sockaddr*>(&storage_); }
  socklen_t addrlen() const { return len_; }
  int family() const { return storage_.ss_family; }
  uint16_t port() const;
  void set_port(uint16_t port);
  bool IsWildcard() const;
  bool IsLoopback() const;
  // "127.0.0.1:7050" or "[::1]:7050".
  std::string ToString() const;
  std::string host() const;
  size_t Hash() const;

  friend bool operator==(const Sockaddr& a, const Sockaddr& b);

 private:
  sockaddr_storage storage_;
  socklen_t len_;
};

struct SockaddrHash {
  size_t operator()(const Sockaddr& a) const { return a.Hash(); }
};

class HostPort {
 public:
  HostPort() = default;
  HostPort(std::string host, uint16_t port) : host_(std::move(host)), port_(port) {}

  // Parses "host", "host:port", "[v6]:port"; `default_port` applies when no port is given.
  static Result<HostPort> Parse(std::string_view s, uint16_t default_port);
  // Parses a comma-separated list.
  static Result<std::vector<HostPort>> ParseList(std::string_view s, uint16_t default_port);

  // Resolves with getaddrinfo (may block on DNS).
  Result<std::vector<Sockaddr>> Resolve() const;

  const std::string& host() const { return host_; }
  uint16_t port() const { return port_; }
  std::string ToString() const;
  friend bool operator==(const HostPort& a, const HostPort& b) = default;

 private:
  std::string host_;
  uint16_t port_ = 0;
};

// The first non-loopback IPv4 address of this host, or 127.0.0.1 if there is none.
std::string FirstNonLoopbackAddress();

// "a.b.c.d:port" or "[v6]:port" as is, else "host:port" resolved (getaddrinfo: may block
// on DNS) to its first address. NetworkError when nothing resolves.
Result<Sockaddr> ResolveAddress(std::string_view host_port);

}  // namespace nyala::rpc
