// Replica placement: "power of two choices". For each replica, two distinct
// candidate servers are drawn at random from those not yet holding a replica of
// the tablet, and the less loaded one (fewer replicas placed on it) wins; with one
// candidate left it wins alone. A tablet never gets two replicas on one server.
// A replacement replica (for a failed one) goes to the least loaded of the servers
// the caller found eligible (PlaceReplacement): one server at a time, so the choice
// can afford to look at every candidate.
//
// Pure functions over the caller's load map; thread-compatible (the caller owns
// `loads` and `rng`).
#pragma once

#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "common/result.h"

namespace nyala::master {

// Replicas placed per live server (uuid -> count). Only these servers are candidates.
using ServerLoads = std::map<std::string, int64_t>;

// Picks `num_replicas` distinct servers for one tablet and adds one to each chosen
// server's load. Servers in `avoid` are used only when there are not enough others.
// InvalidArgument when `loads` has fewer than `num_replicas` servers or
// num_replicas < 1.
Result<std::vector<std::string>> PlaceReplicas(int num_replicas, ServerLoads* loads,
                                               std::mt19937_64* rng,
                                               const std::set<std::string>& avoid = {});

// The server among `candidates` with the fewest replicas in `loads` (absent = 0), ties
// broken at random; adds one to its load. InvalidArgument when `candidates` is empty.
Result<std::string> PlaceReplacement(const std::set<std::string>& candidates, ServerLoads* loads,
                                     std::mt19937_64* rng);

// Moves to the front of `replicas` the one with the fewest leaders in
// `leader_loads` (absent = 0; ties: the earlier one), keeping the others' order,
// and adds one to its leader count.
void OrderForLeadership(std::vector<std::string>* replicas, ServerLoads* leader_loads);

}  // namespace nyala::master
