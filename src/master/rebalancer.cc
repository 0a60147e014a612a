#include "master/rebalancer.h"

#include <algorithm>

namespace nyala::master {

namespace {

bool Contains(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// The members of `t` once its move in progress is done.
std::vector<std::string> MembersAfterMove(const RebalanceTablet& t) {
  std::vector<std::string> out;
  for (const auto* list : {&t.voters, &t.learners}) {
    for (const auto& m : *list) {
      if (m != t.moving_from && !Contains(out, m)) out.push_back(m);
    }
  }
  if (!t.moving_to.empty() && !Contains(out, t.moving_to)) out.push_back(t.moving_to);
  return out;
}

// Servers of S by load, fewest first (ties: by uuid).
std::vector<std::string> ByLoad(const std::map<std::string, ServerLoad>& loads, bool leaders) {
  std::vector<std::string> out;
  for (const auto& [uuid, l] : loads) out.push_back(uuid);
  auto count = [&](const std::string& u) {
    const ServerLoad& l = loads.at(u);
    return leaders ? l.leaders : l.replicas;
  };
  std::stable_sort(out.begin(), out.end(),
                   [&](const std::string& a, const std::string& b) { return count(a) < count(b); });
  return out;
}

}  // namespace

RebalancePlan PlanRebalance(const RebalanceInput& in) {
  RebalancePlan plan;
  std::map<std::string, ServerLoad> loads;
  for (const auto& s : in.servers) loads[s];
  // Replicas per (table, server), for choosing among tablets.
  std::map<std::pair<std::string, std::string>, int> per_table;
  bool moving = false;
  for (const auto& t : in.tablets) {
    moving = moving || !t.moving_from.empty();
    for (const auto& m : MembersAfterMove(t)) {
      auto it = loads.find(m);
      if (it == loads.end()) continue;
      it->second.replicas++;
      per_table[{t.table_id, m}]++;
    }
    auto leader = loads.find(t.leader);
    if (leader != loads.end()) leader->second.leaders++;
  }
  plan.before = loads;

  std::set<std::string> planned;  // tablets given a move or a transfer
  auto table_skew = [&](const RebalanceTablet& t, const std::string& hi, const std::string& lo) {
    return per_table[{t.table_id, hi}] - per_table[{t.table_id, lo}];
  };

  // 1. Replicas.
  while (int(plan.moves.size()) < in.max_moves && loads.size() >= 2) {
    const std::vector<std::string> order = ByLoad(loads, /*leaders=*/false);
    const RebalanceTablet* best = nullptr;
    std::string best_hi;
    std::string best_lo;
    // The most loaded server first, to the least loaded it can give a replica to.
    for (auto hi = order.rbegin(); hi != order.rend() && best == nullptr; ++hi) {
      for (auto lo = order.begin(); lo != order.end() && best == nullptr; ++lo) {
        if (loads[*hi].replicas - loads[*lo].replicas < 2) break;
        for (const auto& t : in.tablets) {
          if (t.busy || planned.count(t.id) || !Contains(t.voters, *hi) || t.moving_from == *hi) {
            continue;
          }
          const std::vector<std::string> members = MembersAfterMove(t);
          if (Contains(members, *lo)) continue;
          if (best == nullptr || table_skew(t, *hi, *lo) > table_skew(*best, *hi, *lo) ||
              (table_skew(t, *hi, *lo) == table_skew(*best, *hi, *lo) && best->leader == *hi &&
               t.leader != *hi)) {
            best = &t;
          }
        }
        if (best != nullptr) {
          best_hi = *hi;
          best_lo = *lo;
        }
      }
    }
    if (best == nullptr) break;
    planned.insert(best->id);
    plan.moves.push_back({best->id, best->table_id, best_hi, best_lo});
    loads[best_hi].replicas--;
    loads[best_lo].replicas++;
    per_table[{best->table_id, best_hi}]--;
    per_table[{best->table_id, best_lo}]++;
  }

  // 2. Leaders, once replicas are settled.
  bool busy = moving;
  for (const auto& t : in.tablets) busy = busy || t.busy;
  if (in.leaders && plan.moves.empty() && !busy) {
    while (int(plan.leader_transfers.size()) < in.max_moves && loads.size() >= 2) {
      const std::vector<std::string> order = ByLoad(loads, /*leaders=*/true);
      const RebalanceTablet* pick = nullptr;
      std::string from;
      std::string to;
      for (auto hi = order.rbegin(); hi != order.rend() && pick == nullptr; ++hi) {
        for (auto lo = order.begin(); lo != order.end() && pick == nullptr; ++lo) {
          if (loads[*hi].leaders - loads[*lo].leaders < 2) break;
          for (const auto& t : in.tablets) {
            if (t.leader == *hi && !planned.count(t.id) && Contains(t.voters, *lo)) {
              pick = &t;
              from = *hi;
              to = *lo;
              break;
            }
          }
        }
      }
      if (pick == nullptr) break;
      planned.insert(pick->id);
      plan.leader_transfers.push_back({pick->id, pick->table_id, from, to});
      loads[from].leaders--;
      loads[to].leaders++;
    }
  }
  plan.after = loads;
  return plan;
}

}  // namespace nyala::master
