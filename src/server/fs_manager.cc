#include "server/fs_manager.h"
#include "common/status.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

namespace nyala::server {

namespace fs = std::filesystem;

std::vector<std::string> SplitCommaList(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    while (!item.empty() && item.front() == ' ') item.erase(item.begin());
    while (!item.empty() && item.back() == ' ') item.pop_back();
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

std::string GenerateUuid() {
  // Seeded once per thread: a std::random_device costs more to open than a one-row
  // scan, which takes a scanner id.
  thread_local std::mt19937_64 rng = [] {
    std::random_device rd;
    std::seed_seq seq{rd(), rd(), rd(), rd()};
    return std::mt19937_64(seq);
  }();
  char buf[33];
  snprintf(buf, sizeof(buf), "%016llx%016llx", (unsigned long long)rng(),
           (unsigned long long)rng());
  return buf;
}

namespace {

Status LockDir(const std::string& dir, const std::string& kind, int* fd_out) {
  const std::string path = dir + "/LOCK";
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return Status::IOError("cannot open lock file " + path, strerror(errno), errno);
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    char holder[64] = "";
    ssize_t n = pread(fd, holder, sizeof(holder) - 1, 0);
    if (n > 0) holder[n] = '\0';
    close(fd);
    if (err == EWOULDBLOCK) {
      return Status::IllegalState("data dir " + dir + " is locked by another process (" +
                                  std::string(holder[0] ? holder : "unknown pid") +
                                  "); is a nyala-" + kind + " already running on it?");
    }
    return Status::IOError("cannot lock " + path, strerror(err), err);
  }
  std::string me = "pid " + std::to_string(getpid());
  if (ftruncate(fd, 0) != 0 || pwrite(fd, me.data(), me.size(), 0) != ssize_t(me.size())) {
    int err = errno;
    close(fd);
    return Status::IOError("data dir " + dir + " is not writable", strerror(err), err);
  }
  *fd_out = fd;
  return Status::OK();
}

}  // namespace

Result<std::unique_ptr<FsManager>> FsManager::Open(const std::vector<std::string>& dirs,
                                                   const std::string& kind) {
  if (dirs.empty()) {
    return Status::InvalidArgument("no data directory given: set --fs_data_dirs");
  }
  std::unique_ptr<FsManager> fsm(new FsManager());
  for (const auto& d : dirs) {
    std::error_code ec;
    fs::create_directories(d, ec);
    if (ec) {
      return Status::IOError("cannot create data dir " + d, ec.message());
    }
    if (access(d.c_str(), W_OK | X_OK) != 0) {
      return Status::IOError("data dir " + d + " is not writable", strerror(errno), errno);
    }
    int fd;
    RETURN_NOT_OK(LockDir(d, kind, &fd));
    fsm->lock_fds_.push_back(fd);
    fsm->dirs_.push_back(fs::absolute(d).lexically_normal().string());
  }
  const std::string instance = fsm->dirs_[0] + "/instance";
  std::ifstream in(instance);
  if (in) {
    std::string line;
    std::string file_kind;
    while (std::getline(in, line)) {
      if (line.rfind("uuid=", 0) == 0) fsm->uuid_ = line.substr(5);
      if (line.rfind("kind=", 0) == 0) file_kind = line.substr(5);
    }
    if (fsm->uuid_.size() != 32) {
      return Status::Corruption("instance file " + instance + " has no valid uuid");
    }
    if (!file_kind.empty() && file_kind != kind) {
      return Status::IllegalState("data dir " + fsm->dirs_[0] + " belongs to a nyala-" + file_kind +
                                  ", not a nyala-" + kind);
    }
    return fsm;
  }
  fsm->uuid_ = GenerateUuid();
  fsm->created_ = true;
  const std::string tmp = instance + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << "uuid=" << fsm->uuid_ << "\nkind=" << kind << "\n";
    out.flush();
    if (!out) return Status::IOError("cannot write " + tmp);
  }
  int fd = open(tmp.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    fsync(fd);
    close(fd);
  }
  if (rename(tmp.c_str(), instance.c_str()) != 0) {
    return Status::IOError("cannot create " + instance, strerror(errno), errno);
  }
  return fsm;
}

FsManager::~FsManager() {
  for (int fd : lock_fds_) close(fd);  // releases the flock
}

}  // namespace nyala::server
