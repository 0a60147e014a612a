// ScopedFd: closes a file descriptor when it goes out of scope; ErrnoStatus: an
// IOError for a failed system call.
#pragma once

#include <unistd.h>

#include <cstring>
#include <string>

#include "common/status.h"

namespace nyala {

class ScopedFd {
 public:
  explicit ScopedFd(int fd) : fd_(fd) {}
  ~ScopedFd() {
    if (fd_ >= 0) close(fd_);
  }
  ScopedFd(const ScopedFd&) = delete;
  ScopedFd& operator=(const ScopedFd&) = delete;
  int get() const { return fd_; }

 private:
  const int fd_;
};

// IOError `what` with errno `err`'s message and code.
inline Status ErrnoStatus(const std::string& what, int err) {
  return Status::IOError(what, strerror(err), err);
}

}  // namespace nyala
