#include "test/external_daemon.h"
#include "common/status.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include <glog/logging.h>

#ifndef NYALA_BIN_DIR
#error "NYALA_BIN_DIR must be defined by the build"
#endif

namespace nyala::test {

std::string BinDir() {
  const char* env = getenv("NYALA_BIN_DIR");
  return env && *env ? env : NYALA_BIN_DIR;
}

ExternalDaemon::ExternalDaemon(ExternalDaemonOptions opts)
    : opts_(std::move(opts)),
      data_dir_(opts_.root_dir + "/" + opts_.name + "-data"),
      log_path_(opts_.root_dir + "/" + opts_.name + ".log"),
      info_path_(opts_.root_dir + "/" + opts_.name + ".info") {}

ExternalDaemon::~ExternalDaemon() {
  if (pid_ > 0) Kill();
}

Status ExternalDaemon::Start() {
  if (pid_ > 0) return Status::IllegalState(opts_.name + " is already running");
  std::filesystem::create_directories(opts_.root_dir);
  unlink(info_path_.c_str());
  std::vector<std::string> args = {opts_.binary, "--fs_data_dirs=" + data_dir_,
                                   "--server_dump_info_path=" + info_path_};
  // Same ports as last time on a restart; port 0 (pick one) the first time.
  const std::string port = rpc_addr_.port() ? std::to_string(rpc_addr_.port()) : "0";
  args.push_back("--rpc_bind_addresses=127.0.0.1:" + port);
  args.push_back("--webserver_port=" + std::to_string(http_port_));
  args.push_back("--webserver_interface=127.0.0.1");
  for (const auto& f : opts_.flags) args.push_back(f);

  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) return Status::RuntimeError("fork", strerror(errno), errno);
  if (pid == 0) {
    // Die with the test if it dies (a crash or a failed ASSERT in a helper thread
    // skips the destructors that stop the daemons). The signal comes when the forking
    // thread exits, so start daemons from a thread that lives as long as they do.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1);  // the test died before prctl took effect
    int fd = open(log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
      close(fd);
    }
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    fprintf(stderr, "exec %s failed: %s\n", argv[0], strerror(errno));
    _exit(127);
  }
  pid_ = pid;
  const MonoTime deadline = MonoTime::Now() + opts_.start_timeout;
  MonoDelta backoff = MonoDelta::FromMilliseconds(2);
  while (true) {
    int status;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return Status::RuntimeError(opts_.name + " exited during start-up; log:\n" + LogTail());
    }
    bool ready = false;
    RETURN_NOT_OK(ReadInfoFile(&ready));
    if (ready) return Status::OK();
    if (MonoTime::Now() > deadline) {
      Kill();
      return Status::TimedOut(opts_.name + " did not start within " +
                              opts_.start_timeout.ToString() + "; log:\n" + LogTail());
    }
    SleepFor(backoff);  // polling for a file another process writes
    backoff = std::min(backoff * 2, MonoDelta::FromMilliseconds(50));
  }
}

Status ExternalDaemon::ReadInfoFile(bool* ready) {
  std::ifstream in(info_path_);
  *ready = false;
  if (!in) return Status::OK();
  std::string line;
  while (std::getline(in, line)) {
    auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    std::string k = line.substr(0, eq), v = line.substr(eq + 1);
    if (k == "uuid") uuid_ = v;
    if (k == "rpc") {
      auto a = rpc::Sockaddr::ParseNumeric(v);
      if (!a.ok()) return a.status();
      rpc_addr_ = *a;
    }
    if (k == "http_port") http_port_ = std::stoi(v);
  }
  *ready = !uuid_.empty() && rpc_addr_.port() != 0;
  return Status::OK();
}

Status ExternalDaemon::Shutdown(MonoDelta grace) {
  if (pid_ <= 0) return Status::OK();
  kill(pid_, SIGTERM);
  const MonoTime deadline = MonoTime::Now() + grace;
  int status = 0;
  while (true) {
    pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) break;
    if (MonoTime::Now() > deadline) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      pid_ = -1;
      return Status::TimedOut(opts_.name + " did not exit within " + grace.ToString() +
                              " of SIGTERM; killed");
    }
    SleepFor(MonoDelta::FromMilliseconds(5));
  }
  pid_ = -1;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return Status::OK();
  return Status::RuntimeError(opts_.name + " exited with status " + std::to_string(status) +
                              "; log:\n" + LogTail());
}

void ExternalDaemon::Kill(int sig) {
  if (pid_ <= 0) return;
  kill(pid_, sig);
  int status;
  waitpid(pid_, &status, 0);
  pid_ = -1;
}

Status ExternalDaemon::Restart() {
  if (pid_ > 0) RETURN_NOT_OK(Shutdown());
  return Start();
}

bool ExternalDaemon::IsRunning() {
  if (pid_ <= 0) return false;
  int status;
  if (waitpid(pid_, &status, WNOHANG) == pid_) {
    pid_ = -1;
    if (WIFSIGNALED(status)) {
      exit_description_ = "killed by signal " + std::to_string(WTERMSIG(status)) + " (" +
                          strsignal(WTERMSIG(status)) + ")";
    } else {
      exit_description_ = "exited with status " + std::to_string(WEXITSTATUS(status));
    }
    return false;
  }
  return true;
}

std::string ExternalDaemon::LogTail(size_t max_bytes) const {
  std::ifstream in(log_path_, std::ios::binary);
  if (!in) return "(no log)";
  in.seekg(0, std::ios::end);
  std::streamoff size = in.tellg();
  std::streamoff start = size > std::streamoff(max_bytes) ? size - max_bytes : 0;
  in.seekg(start);
  std::string out(size_t(size - start), '\0');
  in.read(out.data(), out.size());
  return out;
}

}  // namespace nyala::test
