// protoc-gen-nyalarpc: the protoc plugin that turns each `service` of a .proto into
// a typed server interface and a typed client proxy. CMake runs it on every .proto
// with a service (cmake/Nyala.cmake, nyala_proto). For foo/bar.proto it writes:
//
//   foo/bar.service.h/.cc  class <Service>If : rpc::ServiceIf, one pure virtual method
//                          per RPC (request, response, call context) and the method
//                          table built from them, with each method's reactor_policy
//                          (rpc/rpc_options.proto);
//   foo/bar.proxy.h/.cc    class <Service>Proxy: <Method>(req, &resp, &controller)
//                          blocking and <Method>Async(req, &resp, &controller, callback).
//
// Both carry the service's and every method's name as constants, so no RPC name is
// written by hand anywhere else. Streaming methods are refused.
#include <google/protobuf/compiler/code_generator.h>
#include <google/protobuf/compiler/plugin.h>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/printer.h>
#include <google/protobuf/io/zero_copy_stream.h>

#include <map>
#include <memory>
#include <string>

#include "rpc/rpc_options.pb.h"

namespace nyala::rpc {
namespace {

namespace gp = google::protobuf;
using gp::compiler::GeneratorContext;
using gp::io::Printer;
using Vars = std::map<std::string, std::string>;

// "nyala.tserver.WriteRequestPB" -> "::nyala::tserver::WriteRequestPB".
std::string CppName(const std::string& full_name) {
  std::string out = "::";
  for (char c : full_name) {
    if (c == '.') {
      out += "::";
    } else {
      out += c;
    }
  }
  return out;
}

std::string Namespace(const gp::FileDescriptor* file) {
  std::string ns = CppName(file->package());
  return ns.substr(2);  // "nyala::tserver"
}

// "foo/bar.proto" -> "foo/bar".
std::string StripProto(const std::string& name) {
  return name.substr(0, name.size() - std::string(".proto").size());
}

// A comment block: each line of the .proto's leading comment, prefixed "// ".
std::string CommentLines(const std::string& text, const std::string& indent) {
  std::string out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    if (!line.empty() && line[0] == ' ') line.erase(0, 1);
    out += indent + (line.empty() ? "//" : "// " + line) + "\n";
    start = end + 1;
  }
  return out;
}

std::string LeadingComments(const gp::MethodDescriptor* m) {
  gp::SourceLocation loc;
  return m->GetSourceLocation(&loc) ? loc.leading_comments : "";
}
std::string LeadingComments(const gp::ServiceDescriptor* s) {
  gp::SourceLocation loc;
  return s->GetSourceLocation(&loc) ? loc.leading_comments : "";
}

ReactorPolicyPB PolicyOf(const gp::MethodDescriptor* m) {
  return m->options().GetExtension(reactor_policy);
}

Vars MethodVars(const gp::MethodDescriptor* m) {
  Vars v;
  v["method"] = m->name();
  v["req"] = CppName(m->input_type()->full_name());
  v["resp"] = CppName(m->output_type()->full_name());
  switch (PolicyOf(m)) {
    case SERVICE_THREAD:
      v["policy"] = "kServiceThread";
      break;
    case ON_REACTOR:
      v["policy"] = "kOnReactor";
      break;
    case REACTOR_FAST_PATH:
      v["policy"] = "kReactorFastPath";
      break;
  }
  return v;
}

class Generator : public gp::compiler::CodeGenerator {
 public:
  // We read only services and methods, so proto3 `optional` fields are no concern.
  uint64_t GetSupportedFeatures() const override { return FEATURE_PROTO3_OPTIONAL; }

  bool Generate(const gp::FileDescriptor* file, const std::string& parameter,
                GeneratorContext* context, std::string* error) const override {
    if (file->service_count() == 0) return true;
    for (int i = 0; i < file->service_count(); i++) {
      const gp::ServiceDescriptor* s = file->service(i);
      for (int j = 0; j < s->method_count(); j++) {
        const gp::MethodDescriptor* m = s->method(j);
        if (m->client_streaming() || m->server_streaming()) {
          *error = s->full_name() + "." + m->name() + ": streaming RPCs are not supported";
          return false;
        }
      }
    }
    const std::string base = StripProto(file->name());
    Vars fv;
    fv["proto"] = file->name();
    fv["base"] = base;
    fv["ns"] = Namespace(file);
    WriteServiceHeader(file, fv, context);
    WriteServiceSource(file, fv, context);
    WriteProxyHeader(file, fv, context);
    WriteProxySource(file, fv, context);
    return true;
  }

 private:
  static Vars ServiceVars(const gp::ServiceDescriptor* s, Vars v) {
    v["service"] = s->name();
    v["full_service"] = s->full_name();
    return v;
  }

  // Method-name constants, shared by the interface and the proxy.
  static void PrintNameConstants(Printer* p, const gp::ServiceDescriptor* s) {
    p->Print("  static constexpr char kServiceName[] = \"$full$\";\n", "full", s->full_name());
    for (int j = 0; j < s->method_count(); j++) {
      p->Print("  static constexpr char k$m$MethodName[] = \"$m$\";\n", "m", s->method(j)->name());
    }
    p->Print("  static constexpr const char* kMethodNames[] = {");
    for (int j = 0; j < s->method_count(); j++) {
      p->Print(j == 0 ? "k$m$MethodName" : ", k$m$MethodName", "m", s->method(j)->name());
    }
    p->Print("};\n");
  }

  void WriteServiceHeader(const gp::FileDescriptor* file, const Vars& fv,
                          GeneratorContext* context) const {
    std::unique_ptr<gp::io::ZeroCopyOutputStream> out(context->Open(fv.at("base") + ".service.h"));
    Printer p(out.get(), '$');
    p.Print(fv,
            "// Generated by protoc-gen-nyalarpc from $proto$. Do not edit.\n"
            "// Server interfaces: implement every method; each answers its call exactly once\n"
            "// through the RpcContext, from any thread.\n"
            "#pragma once\n\n"
            "#include \"$base$.pb.h\"\n"
            "#include \"rpc/service_if.h\"\n\n"
            "namespace $ns$ {\n\n");
    for (int i = 0; i < file->service_count(); i++) {
      const gp::ServiceDescriptor* s = file->service(i);
      Vars sv = ServiceVars(s, fv);
      p.PrintRaw(CommentLines(LeadingComments(s), ""));
      p.Print(sv, "class $service$If : public ::nyala::rpc::ServiceIf {\n public:\n");
      PrintNameConstants(&p, s);
      p.Print(sv, "\n  ~$service$If() override = default;\n\n");
      for (int j = 0; j < s->method_count(); j++) {
        const gp::MethodDescriptor* m = s->method(j);
        Vars mv = MethodVars(m);
        p.PrintRaw(CommentLines(LeadingComments(m), "  "));
        p.Print(mv,
                "  virtual void $method$(const $req$* req, $resp$* resp,\n"
                "                       ::nyala::rpc::RpcContext* ctx) = 0;\n");
        if (PolicyOf(m) == REACTOR_FAST_PATH) {
          p.Print(mv,
                  "  // Tried first on the reactor thread that read the call; must not block.\n"
                  "  // Returns false, without answering, to pass the call to $method$() on a\n"
                  "  // service thread (with a fresh response); true once it has answered.\n"
                  "  virtual bool Try$method$OnReactor(const $req$* req, $resp$* resp,\n"
                  "                                    ::nyala::rpc::RpcContext* ctx) = 0;\n");
        }
        p.Print("\n");
      }
      p.Print(sv, " protected:\n  $service$If();\n};\n\n");
    }
    p.Print(fv, "}  // namespace $ns$\n");
  }

  void WriteServiceSource(const gp::FileDescriptor* file, const Vars& fv,
                          GeneratorContext* context) const {
    std::unique_ptr<gp::io::ZeroCopyOutputStream> out(context->Open(fv.at("base") + ".service.cc"));
    Printer p(out.get(), '$');
    p.Print(fv,
            "// Generated by protoc-gen-nyalarpc from $proto$. Do not edit.\n"
            "#include \"$base$.service.h\"\n\n"
            "namespace $ns$ {\n\n");
    for (int i = 0; i < file->service_count(); i++) {
      const gp::ServiceDescriptor* s = file->service(i);
      Vars sv = ServiceVars(s, fv);
      p.Print(sv, "$service$If::$service$If() : ServiceIf(kServiceName) {\n");
      for (int j = 0; j < s->method_count(); j++) {
        const gp::MethodDescriptor* m = s->method(j);
        Vars mv = MethodVars(m);
        mv["service"] = s->name();
        p.Print(mv,
                "  AddMethod<$req$, $resp$>(\n"
                "      k$method$MethodName, ::nyala::rpc::ReactorPolicy::$policy$,\n"
                "      [this](const $req$* req, $resp$* resp, ::nyala::rpc::RpcContext* ctx) {\n"
                "        $method$(req, resp, ctx);\n"
                "      }");
        if (PolicyOf(m) == REACTOR_FAST_PATH) {
          p.Print(mv,
                  ",\n"
                  "      [this](const $req$* req, $resp$* resp, ::nyala::rpc::RpcContext* ctx) {\n"
                  "        return Try$method$OnReactor(req, resp, ctx);\n"
                  "      }");
        }
        p.Print(");\n");
      }
      p.Print("}\n\n");
    }
    p.Print(fv, "}  // namespace $ns$\n");
  }

  void WriteProxyHeader(const gp::FileDescriptor* file, const Vars& fv,
                        GeneratorContext* context) const {
    std::unique_ptr<gp::io::ZeroCopyOutputStream> out(context->Open(fv.at("base") + ".proxy.h"));
    Printer p(out.get(), '$');
    p.Print(fv,
            "// Generated by protoc-gen-nyalarpc from $proto$. Do not edit.\n"
            "// Client proxies: thread-safe and cheap to copy (the messenger owns the\n"
            "// connections). <Method>() blocks until the answer and returns\n"
            "// controller->status(); it must not run on a reactor thread. <Method>Async()\n"
            "// calls `callback` exactly once, on a reactor thread, when the call completed;\n"
            "// `resp` and `controller` must stay valid until then.\n"
            "#pragma once\n\n"
            "#include <functional>\n"
            "#include <memory>\n\n"
            "#include \"$base$.pb.h\"\n"
            "#include \"common/status.h\"\n"
            "#include \"rpc/proxy.h\"\n\n"
            "namespace $ns$ {\n\n");
    for (int i = 0; i < file->service_count(); i++) {
      const gp::ServiceDescriptor* s = file->service(i);
      Vars sv = ServiceVars(s, fv);
      p.Print(sv, "// The client side of $full_service$.\nclass $service$Proxy {\n public:\n");
      PrintNameConstants(&p, s);
      p.Print(sv,
              "\n  $service$Proxy(std::shared_ptr<::nyala::rpc::Messenger> messenger,\n"
              "               ::nyala::rpc::Sockaddr remote);\n\n");
      for (int j = 0; j < s->method_count(); j++) {
        Vars mv = MethodVars(s->method(j));
        p.Print(mv,
                "  ::nyala::Status $method$(const $req$& req, $resp$* resp,\n"
                "                   ::nyala::rpc::RpcController* controller) const;\n"
                "  void $method$Async(const $req$& req, $resp$* resp,\n"
                "                   ::nyala::rpc::RpcController* controller,\n"
                "                   std::function<void()> callback) const;\n");
      }
      p.Print(sv,
              "\n  const ::nyala::rpc::Sockaddr& remote() const { return proxy_.remote(); }\n\n"
              " private:\n"
              "  ::nyala::rpc::Proxy proxy_;\n"
              "};\n\n");
    }
    p.Print(fv, "}  // namespace $ns$\n");
  }

  void WriteProxySource(const gp::FileDescriptor* file, const Vars& fv,
                        GeneratorContext* context) const {
    std::unique_ptr<gp::io::ZeroCopyOutputStream> out(context->Open(fv.at("base") + ".proxy.cc"));
    Printer p(out.get(), '$');
    p.Print(fv,
            "// Generated by protoc-gen-nyalarpc from $proto$. Do not edit.\n"
            "#include \"$base$.proxy.h\"\n\n"
            "#include <utility>\n\n"
            "namespace $ns$ {\n\n");
    for (int i = 0; i < file->service_count(); i++) {
      const gp::ServiceDescriptor* s = file->service(i);
      Vars sv = ServiceVars(s, fv);
      p.Print(sv,
              "$service$Proxy::$service$Proxy(std::shared_ptr<::nyala::rpc::Messenger> messenger,\n"
              "    ::nyala::rpc::Sockaddr remote)\n"
              "    : proxy_(std::move(messenger), std::move(remote), kServiceName) {}\n\n");
      for (int j = 0; j < s->method_count(); j++) {
        Vars mv = MethodVars(s->method(j));
        mv["service"] = s->name();
        p.Print(mv,
                "::nyala::Status $service$Proxy::$method$(const $req$& req, $resp$* resp,\n"
                "    ::nyala::rpc::RpcController* controller) const {\n"
                "  return proxy_.SyncRequest(k$method$MethodName, req, resp, controller);\n"
                "}\n\n"
                "void $service$Proxy::$method$Async(const $req$& req, $resp$* resp,\n"
                "    ::nyala::rpc::RpcController* controller, std::function<void()> callback) "
                "const {\n"
                "  proxy_.AsyncRequest(k$method$MethodName, req, resp, controller,\n"
                "                      std::move(callback));\n"
                "}\n\n");
      }
    }
    p.Print(fv, "}  // namespace $ns$\n");
  }
};

}  // namespace
}  // namespace nyala::rpc

int main(int argc, char** argv) {
  nyala::rpc::Generator generator;
  return google::protobuf::compiler::PluginMain(argc, argv, &generator);
}
