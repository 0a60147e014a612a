// FsManager: a daemon's data directories (--fs_data_dirs). Open() creates them if
// needed, checks they are writable, takes an exclusive lock on each (a second
// process on the same dirs is refused with a message naming the holder), and reads
// or creates the server's permanent uuid in the first dir's `instance` file.
//
// Thread-safety: immutable after Open(); the locks are held until destruction.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/result.h"

namespace nyala::server {

class FsManager {
 public:
  // `dirs` is the parsed --fs_data_dirs (at least one). `kind` names the daemon in
  // messages and in the instance file ("master" or "tserver"): a dir created by one
  // kind is refused by the other.
  static Result<std::unique_ptr<FsManager>> Open(const std::vector<std::string>& dirs,
                                                 const std::string& kind);
  ~FsManager();

  const std::string& uuid() const { return uuid_; }
  const std::vector<std::string>& data_dirs() const { return dirs_; }
  // True when Open() created the instance file (a fresh server).
  bool created() const { return created_; }

 private:
  FsManager() = default;
  std::vector<std::string> dirs_;
  std::vector<int> lock_fds_;
  std::string uuid_;
  bool created_ = false;
};

// Splits a comma-separated flag value, dropping empty items.
std::vector<std::string> SplitCommaList(const std::string& s);

// A random 128-bit id as 32 lowercase hex characters.
std::string GenerateUuid();

}  // namespace nyala::server
