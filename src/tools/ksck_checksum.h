// `nyala cluster ksck --checksum_scan` (Kudu's name): every running replica of a tablet
// checksums its rows right after it applied the same log entry
// (TabletServerAdminService.ChecksumTablet), and the checksums must agree: a replica
// that diverged from the others is named.
//
// The index: the highest applied index among the replicas; a replica already past it
// when asked makes the scan try again at a later index, one the replicas have yet to
// reach under a write load, and at the replicas' index again when they stopped moving.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "nyala/monotime.h"
#include "tools/cluster_admin.h"

namespace nyala::rpc {
class Messenger;
}

namespace nyala::tools {

struct ReplicaChecksum {
  std::string ts_uuid;
  Status status;  // why it could not be checksummed
  uint64_t checksum = 0;
  int64_t rows = 0;
};

struct TabletChecksums {
  uint64_t index = 0;  // the log index every replica was checksummed at (0: none)
  std::vector<ReplicaChecksum> replicas;
  // Problems, one line each: a replica that disagrees with the others, or that could
  // not be checksummed.
  std::vector<std::string> problems;
  bool mismatch = false;  // two replicas disagree
};

// Checksums every running replica of `t` (as GatherTablets saw them) at one index.
// Each call waits at most `timeout`.
TabletChecksums ChecksumTablet(const std::shared_ptr<rpc::Messenger>& messenger,
                               const TabletView& t, MonoDelta timeout);

}  // namespace nyala::tools
