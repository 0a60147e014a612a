// Webserver: the daemons' HTTP status server, on libevent's evhttp, one thread.
// Handlers are registered by exact path before Start(); each gets the request's
// query arguments and fills a response. HTML pages get the shared header, navigation
// and CSS around their body; other content types are sent as produced.
//
// Thread-safety: Register*() before Start(); handlers run on the webserver thread
// and must be thread-safe with respect to the state they read.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "rpc/libevent_util.h"

struct event_base;
struct evhttp;
struct evhttp_request;

namespace nyala::server {

struct WebRequest {
  std::string path;
  std::map<std::string, std::string> args;  // decoded query arguments
  std::string GetArg(const std::string& name, const std::string& def = "") const {
    auto it = args.find(name);
    return it == args.end() ? def : it->second;
  }
};

struct WebResponse {
  int status_code = 200;
  std::string content_type = "text/html; charset=utf-8";
  std::string body;
};

class Webserver {
 public:
  using Handler = std::function<void(const WebRequest&, WebResponse*)>;

  // `title` heads every page (e.g. "nyala-master").
  explicit Webserver(std::string title);
  ~Webserver();

  // An HTML page: `handler` writes the page body; it is wrapped in the common layout.
  // `nav_label`, when not empty, adds a link in the navigation bar.
  void RegisterPage(const std::string& path, const std::string& nav_label, Handler handler);
  // A raw endpoint: the handler sets content type and the whole body.
  void RegisterRaw(const std::string& path, Handler handler);

  // Binds `host`:`port` (0 picks a free port) and starts serving.
  Status Start(const std::string& host, int port);
  void Shutdown();
  int port() const { return port_; }

 private:
  struct Route {
    bool page;
    std::string nav_label;
    Handler handler;
  };
  static void OnRequest(evhttp_request* req, void* arg);
  void Handle(evhttp_request* req);
  std::string WrapPage(const std::string& path, const std::string& body) const;

  const std::string title_;
  std::map<std::string, Route> routes_;
  std::vector<std::pair<std::string, std::string>> nav_;  // path, label
  struct EvHttpDeleter {
    void operator()(evhttp* http) const;
  };
  rpc::EventBasePtr base_;
  std::unique_ptr<evhttp, EvHttpDeleter> http_;  // freed before base_
  std::thread thread_;
  std::atomic<bool> loop_exited_{false};
  int port_ = 0;
};

// Escapes &, <, >, " and ' for HTML text and attribute values.
std::string EscapeHtml(const std::string& s);

// Percent-encodes every byte but the unreserved ones (A-Z a-z 0-9 - . _ ~), for a
// query argument.
std::string UrlEncode(const std::string& s);

// "http://host:port<path>", with an IPv6 host in brackets; `path` starts with '/'.
std::string HttpUrl(const std::string& host, int port, const std::string& path = "/");

}  // namespace nyala::server
