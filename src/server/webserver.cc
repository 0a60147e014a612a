#include "server/webserver.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <glog/logging.h>
#include <pthread.h>

#include "nyala/monotime.h"
#include "rpc/reactor.h"

namespace nyala::server {

std::string EscapeHtml(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string UrlEncode(const std::string& s) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '.' || c == '_' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string HttpUrl(const std::string& host, int port, const std::string& path) {
  const bool v6 = host.find(':') != std::string::npos && host.front() != '[';
  return "http://" + (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port) + path;
}

namespace {
constexpr const char* kCss = R"(
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 0;
       color: #222; }
header { background: #2d3b45; color: #fff; padding: 0.6em 1.2em; }
header a { color: #cfe3f0; margin-right: 1.2em; text-decoration: none; }
header .title { font-weight: bold; margin-right: 2em; color: #fff; }
main { padding: 1em 1.5em; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
th, td { border: 1px solid #ccd; padding: 0.25em 0.7em; text-align: left;
         font-variant-numeric: tabular-nums; }
th { background: #eef2f5; }
.ok { color: #17692b; font-weight: bold; } .bad { color: #a31515; font-weight: bold; }
pre { background: #f5f7f9; padding: 0.7em; overflow-x: auto; }
)";
}  // namespace

Webserver::Webserver(std::string title) : title_(std::move(title)) {}

Webserver::~Webserver() { Shutdown(); }

void Webserver::RegisterPage(const std::string& path, const std::string& nav_label,
                             Handler handler) {
  routes_[path] = Route{true, nav_label, std::move(handler)};
  if (!nav_label.empty()) nav_.emplace_back(path, nav_label);
}

void Webserver::RegisterRaw(const std::string& path, Handler handler) {
  routes_[path] = Route{false, "", std::move(handler)};
}

Status Webserver::Start(const std::string& host, int port) {
  rpc::InitLibeventThreading();  // Shutdown() breaks the loop from another thread
  base_.reset(event_base_new());
  http_.reset(evhttp_new(base_.get()));
  evhttp_set_gencb(http_.get(), &Webserver::OnRequest, this);
  evhttp_set_allowed_methods(http_.get(), EVHTTP_REQ_GET | EVHTTP_REQ_HEAD);
  evhttp_bound_socket* sock = evhttp_bind_socket_with_handle(http_.get(), host.c_str(), port);
  if (!sock) {
    http_.reset();
    base_.reset();
    return Status::NetworkError("cannot bind the web server to " + host + ":" +
                                std::to_string(port) + "; set --webserver_port (0 picks one)");
  }
  evutil_socket_t fd = evhttp_bound_socket_get_fd(sock);
  sockaddr_storage ss;
  socklen_t len = sizeof(ss);
  getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
  port_ = ntohs(ss.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port
                                         : reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "webserver");
    event_base_loop(base_.get(), EVLOOP_NO_EXIT_ON_EMPTY);
    loop_exited_ = true;
  });
  return Status::OK();
}

void Webserver::Shutdown() {
  if (!base_) return;
  // A break requested before the loop starts is forgotten when it starts: repeat it.
  while (thread_.joinable() && !loop_exited_) {
    event_base_loopbreak(base_.get());
    SleepFor(MonoDelta::FromMilliseconds(1));
  }
  if (thread_.joinable()) thread_.join();
  http_.reset();
  base_.reset();
}

void Webserver::EvHttpDeleter::operator()(evhttp* http) const { evhttp_free(http); }

void Webserver::OnRequest(evhttp_request* req, void* arg) {
  static_cast<Webserver*>(arg)->Handle(req);
}

void Webserver::Handle(evhttp_request* req) {
  const evhttp_uri* uri = evhttp_request_get_evhttp_uri(req);
  WebRequest wreq;
  const char* path = uri ? evhttp_uri_get_path(uri) : nullptr;
  wreq.path = path && *path ? path : "/";
  if (const char* q = uri ? evhttp_uri_get_query(uri) : nullptr) {
    evkeyvalq params;
    if (evhttp_parse_query_str(q, &params) == 0) {
      for (evkeyval* kv = params.tqh_first; kv; kv = kv->next.tqe_next) {
        wreq.args[kv->key] = kv->value;
      }
      evhttp_clear_headers(&params);
    }
  }
  WebResponse wresp;
  auto it = routes_.find(wreq.path);
  if (it == routes_.end()) {
    wresp.status_code = 404;
    wresp.body =
        WrapPage(wreq.path, "<h2>Not found</h2><p>No page at " + EscapeHtml(wreq.path) + ".</p>");
  } else {
    it->second.handler(wreq, &wresp);
    if (it->second.page && wresp.content_type.rfind("text/html", 0) == 0) {
      wresp.body = WrapPage(wreq.path, wresp.body);
    }
  }
  evkeyvalq* headers = evhttp_request_get_output_headers(req);
  evhttp_add_header(headers, "Content-Type", wresp.content_type.c_str());
  evhttp_add_header(headers, "Cache-Control", "no-store");
  evbuffer* buf = evbuffer_new();
  evbuffer_add(buf, wresp.body.data(), wresp.body.size());
  evhttp_send_reply(req, wresp.status_code, wresp.status_code == 200 ? "OK" : "Error", buf);
  evbuffer_free(buf);
}

std::string Webserver::WrapPage(const std::string& path, const std::string& body) const {
  std::string out = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" +
                    EscapeHtml(title_) + "</title><style>" + kCss + "</style></head><body>";
  out += "<header><span class=\"title\">" + EscapeHtml(title_) + "</span>";
  for (const auto& [p, label] : nav_) {
    out += "<a href=\"" + p + "\"" + (p == path ? " style=\"color:#fff\"" : "") + ">" +
           EscapeHtml(label) + "</a>";
  }
  out += "</header><main>" + body + "</main></body></html>\n";
  return out;
}

}  // namespace nyala::server
