#include "master/placement.h"

#include <algorithm>

namespace nyala::master {

namespace {

// Power of two choices among `candidates` (not empty).
std::string PickOne(const std::vector<std::string>& candidates, const ServerLoads& loads,
                    std::mt19937_64* rng) {
  if (candidates.size() == 1) return candidates[0];
  std::uniform_int_distribution<size_t> dist(0, candidates.size() - 1);
  const size_t a = dist(*rng);
  size_t b = dist(*rng);
  // Bounded: with at least two candidates each draw differs from `a` with
  // probability >= 1/2; after a few misses take the neighbour.
  for (int i = 0; i < 8 && b == a; i++) b = dist(*rng);
  if (b == a) b = (a + 1) % candidates.size();
  const int64_t la = loads.at(candidates[a]);
  const int64_t lb = loads.at(candidates[b]);
  return lb < la ? candidates[b] : candidates[a];
}

}  // namespace

Result<std::vector<std::string>> PlaceReplicas(int num_replicas, ServerLoads* loads,
                                               std::mt19937_64* rng,
                                               const std::set<std::string>& avoid) {
  if (num_replicas < 1) {
    return Status::InvalidArgument("num_replicas must be at least 1", std::to_string(num_replicas));
  }
  if (loads->size() < size_t(num_replicas)) {
    return Status::InvalidArgument(
        "not enough live tablet servers to place " + std::to_string(num_replicas) + " replicas",
        std::to_string(loads->size()) + " live");
  }
  std::vector<std::string> chosen;
  for (int r = 0; r < num_replicas; r++) {
    std::vector<std::string> preferred, fallback;
    for (const auto& [uuid, load] : *loads) {
      if (std::find(chosen.begin(), chosen.end(), uuid) != chosen.end()) continue;
      (avoid.count(uuid) ? fallback : preferred).push_back(uuid);
    }
    const std::vector<std::string>& pool = preferred.empty() ? fallback : preferred;
    std::string pick = PickOne(pool, *loads, rng);
    (*loads)[pick]++;
    chosen.push_back(std::move(pick));
  }
  return chosen;
}

Result<std::string> PlaceReplacement(const std::set<std::string>& candidates, ServerLoads* loads,
                                     std::mt19937_64* rng) {
  if (candidates.empty()) return Status::InvalidArgument("no candidate server");
  auto load = [&](const std::string& uuid) {
    auto it = loads->find(uuid);
    return it == loads->end() ? int64_t(0) : it->second;
  };
  std::vector<std::string> least;
  int64_t fewest = INT64_MAX;
  for (const auto& uuid : candidates) {
    const int64_t l = load(uuid);
    if (l < fewest) {
      fewest = l;
      least.clear();
    }
    if (l == fewest) least.push_back(uuid);
  }
  std::uniform_int_distribution<size_t> dist(0, least.size() - 1);
  std::string pick = least[dist(*rng)];
  (*loads)[pick]++;
  return pick;
}

void OrderForLeadership(std::vector<std::string>* replicas, ServerLoads* leader_loads) {
  if (replicas->empty()) return;
  auto count = [&](const std::string& uuid) {
    auto it = leader_loads->find(uuid);
    return it == leader_loads->end() ? int64_t(0) : it->second;
  };
  auto best = replicas->begin();
  for (auto it = replicas->begin(); it != replicas->end(); ++it) {
    if (count(*it) < count(*best)) best = it;
  }
  std::rotate(replicas->begin(), best, best + 1);
  (*leader_loads)[replicas->front()]++;
}

}  // namespace nyala::master
