// Telling someone at a terminal, within a second, why a command is waiting on the
// master: the client retries an unreachable master until --timeout_ms (30 s by
// default) and says nothing until then. Before a command's first call, `nyala` tries a
// plain TCP connection to every master address at once (at most kProbeTimeoutMs); when
// none answers it prints, e.g.,
//   master 127.0.0.1:1: connection refused, retrying until the 30 s timeout;
//   --timeout_ms to change
// (on one line) and then proceeds as before (a master that comes up in time is used, the exit code
// is that of the command). Only when stderr is a terminal: scripts see no change.
#pragma once

#include <string>
#include <vector>

#include "common/result.h"

namespace nyala::tools {

constexpr int kProbeTimeoutMs = 700;

struct ProbeOutcome {
  std::string address;  // "host:port" as given (port 7051 when omitted)
  Status status;        // OK, or why no TCP connection could be made
};

// Resolves `masters` (comma-separated host[:port]) and tries a TCP connection to each,
// all at once, waiting at most `timeout_ms` in all. InvalidArgument or NetworkError for
// an address that does not parse or resolve.
Result<std::vector<ProbeOutcome>> ProbeMasters(const std::string& masters, int timeout_ms);

// The note to print when no master answered ("master a: connection refused; master b:
// no answer within 0.7 s, retrying until the 30 s timeout; --timeout_ms to change"), or
// "" when one did.
std::string UnreachableMastersNote(const std::vector<ProbeOutcome>& outcomes,
                                   int64_t rpc_timeout_ms);

}  // namespace nyala::tools
