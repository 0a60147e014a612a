// CatalogManager::GetTableLocations: resolving the request, the cache, building
// the answer. CatalogManager::ListTablets: every replica's reported state, for
// operators.
#include <gflags/gflags.h>
#include <glog/logging.h>

#include <unordered_map>

#include "common/flag_tags.h"
#include "master/catalog_manager.h"

DEFINE_int32(table_locations_ttl_ms, 300000,
             "How long clients may cache the answers of GetTableLocations (ttl_millis).");
DEFINE_validator(table_locations_ttl_ms, [](const char*, int32_t v) { return v >= 0; });
TAG_FLAG(table_locations_ttl_ms, runtime);

namespace nyala::master {

namespace {
std::shared_ptr<const std::string> Serialize(const GetTableLocationsResponsePB& resp) {
  auto out = std::make_shared<std::string>();
  resp.SerializeToString(out.get());
  return out;
}

std::shared_ptr<const std::string> ErrorResponse(MasterErrorPB::Code code, const Status& s) {
  GetTableLocationsResponsePB resp;
  SetError(code, s, resp.mutable_error());
  return Serialize(resp);
}
}  // namespace

std::shared_ptr<const std::string> CatalogManager::GetTableLocations(
    const GetTableLocationsRequestPB& req, bool use_cache) {
  const std::string& start = req.partition_key_start();
  const std::string& end = req.partition_key_end();
  if (!start.empty() && !end.empty() && start > end) {
    return ErrorResponse(MasterErrorPB::INVALID_ARGUMENT,
                         Status::InvalidArgument("partition_key_start is after partition_key_end"));
  }
  SharedLock l(state_mu_);
  auto table = FindTableLocked(req.table());
  if (!table) {
    return ErrorResponse(MasterErrorPB::TABLE_NOT_FOUND, TableNotFound(req.table()));
  }
  // The first tablet: the one holding `start`, else (a gap between bounded ranges)
  // the next one.
  const auto& tablets = table->tablets_by_start;
  auto first = tablets.upper_bound(start);
  if (first != tablets.begin()) {
    auto prev = std::prev(first);
    if (prev->second->partition.ContainsPartitionKey(Slice(start))) first = prev;
  }
  TableLocationsCacheKey key;
  std::string encoded_key;
  const bool cached = use_cache && cache_ != nullptr;
  if (cached) {
    key.table_id = table->id;
    // A marker byte keeps "no tablet" apart from a tablet starting at "", and a
    // start key inside the first tablet ('+') apart from one in the gap before it.
    if (first != tablets.end()) {
      const bool holds = first->second->partition.ContainsPartitionKey(Slice(start));
      key.first_tablet_start = (holds ? "+" : "-") + first->first;
    }
    key.partition_key_end = end;
    if (req.has_max_returned_locations()) key.max_returned_locations = req.max_returned_locations();
    key.intern_ts_infos = req.intern_ts_infos_in_response();
    encoded_key = key.Encode();
    if (auto hit = cache_->Lookup(encoded_key)) return hit;
  }
  GetTableLocationsResponsePB resp;
  BuildLocationsLocked(*table, req, first, &resp);
  auto bytes = Serialize(resp);
  // Inserted while state_mu_ is held shared: no change to this table can slip
  // between building the answer and caching it (see the file comment of the header).
  if (cached && !resp.has_error()) cache_->Insert(table->id, encoded_key, bytes);
  return bytes;
}

void CatalogManager::BuildLocationsLocked(
    const TableInfo& table, const GetTableLocationsRequestPB& req,
    std::map<std::string, std::shared_ptr<TabletInfo>>::const_iterator first,
    GetTableLocationsResponsePB* resp) const {
  const std::string& end = req.partition_key_end();
  const uint32_t max = req.has_max_returned_locations() ? req.max_returned_locations() : UINT32_MAX;
  const bool intern = req.intern_ts_infos_in_response();
  std::unordered_map<std::string, uint32_t> interned;  // uuid -> index in ts_infos
  uint32_t n = 0;
  for (auto it = first; it != table.tablets_by_start.end() && n < max; ++it, ++n) {
    const TabletInfo& t = *it->second;
    // Every tablet starting before `end`, and always the one holding the start key.
    const bool holds_start = t.partition.ContainsPartitionKey(Slice(req.partition_key_start()));
    if (!end.empty() && it->first >= end && !(it == first && holds_start)) break;
    if (t.pb.state() != TABLET_RUNNING) {
      resp->Clear();
      SetError(MasterErrorPB::TABLET_NOT_RUNNING,
               Status::ServiceUnavailable("tablet is not running yet", t.id),
               resp->mutable_error());
      return;
    }
    auto* loc = resp->add_tablet_locations();
    loc->set_tablet_id(t.id);
    *loc->mutable_partition() = t.pb.partition();
    // The leader first, then the other voters in placement order, then the learners.
    std::vector<const std::string*> order;
    order.reserve(t.pb.replica_uuids_size() + t.pb.learner_uuids_size());
    for (const auto& uuid : t.pb.replica_uuids()) {
      if (uuid == t.leader_uuid) {
        order.insert(order.begin(), &uuid);
      } else {
        order.push_back(&uuid);
      }
    }
    for (const auto& uuid : t.pb.learner_uuids()) order.push_back(&uuid);
    for (const std::string* uuid : order) {
      const ReplicaRolePB role = t.RoleOf(*uuid);
      if (!intern) {
        auto info = ts_manager_->LiveTSInfo(*uuid);
        if (!info) continue;  // dead or not (yet) registered: not offered to clients
        auto* replica = loc->add_replicas();
        *replica->mutable_ts_info() = std::move(*info);
        replica->set_role(role);
        continue;
      }
      auto found = interned.find(*uuid);
      if (found == interned.end()) {
        auto info = ts_manager_->LiveTSInfo(*uuid);
        if (!info) continue;
        found = interned.emplace(*uuid, uint32_t(resp->ts_infos_size())).first;
        *resp->add_ts_infos() = std::move(*info);
      }
      auto* replica = loc->add_interned_replicas();
      replica->set_ts_info_idx(found->second);
      replica->set_role(role);
    }
  }
  resp->set_ttl_millis(uint32_t(FLAGS_table_locations_ttl_ms));
}

void CatalogManager::ListTablets(const ListTabletsRequestPB& req, ListTabletsResponsePB* resp) {
  const HealthSnapshot health = TakeHealthSnapshot(MonoTime::Now());
  SharedLock l(state_mu_);
  if (!req.tablet_id().empty()) {
    auto t = tablets_.find(req.tablet_id());
    std::shared_ptr<TableInfo> table;
    if (t != tablets_.end()) {
      TableIdentifierPB id;
      id.set_table_id(t->second->pb.table_id());
      table = FindTableLocked(id);
    }
    const TabletStatePB state = t == tablets_.end() ? TABLET_UNKNOWN : t->second->pb.state();
    if (!table || (state != TABLET_CREATING && state != TABLET_RUNNING)) {
      SetError(MasterErrorPB::TABLET_NOT_FOUND,
               Status::NotFound("no current tablet has this id", req.tablet_id()),
               resp->mutable_error());
      return;
    }
    AddTabletsLocked(*table, req.tablet_id(), health, resp);
    return;
  }
  if (!req.table().table_id().empty() || !req.table().table_name().empty()) {
    auto table = FindTableLocked(req.table());
    if (!table) {
      SetError(MasterErrorPB::TABLE_NOT_FOUND, TableNotFound(req.table()), resp->mutable_error());
      return;
    }
    AddTabletsLocked(*table, "", health, resp);
    return;
  }
  std::map<std::string, const TableInfo*> by_name;
  for (const auto& [name, id] : table_ids_by_name_) {
    auto it = tables_.find(id);
    if (it != tables_.end() && it->second->pb.state() != TABLE_DELETED) {
      by_name[name] = it->second.get();
    }
  }
  for (const auto& [name, table] : by_name) AddTabletsLocked(*table, "", health, resp);
}

void CatalogManager::AddTabletsLocked(const TableInfo& table, const std::string& only_tablet,
                                      const HealthSnapshot& health,
                                      ListTabletsResponsePB* resp) const {
  for (const auto& [start, tablet] : table.tablets_by_start) {
    const TabletInfo& t = *tablet;
    if (!only_tablet.empty() && t.id != only_tablet) continue;
    auto* out = resp->add_tablets();
    out->set_tablet_id(t.id);
    out->set_table_id(table.id);
    out->set_table_name(table.pb.name());
    *out->mutable_partition() = t.pb.partition();
    out->set_state(t.pb.state());
    out->set_leader_uuid(t.leader_uuid);
    out->set_term(t.max_term);
    out->set_num_replicas(table.pb.num_replicas());
    if (t.pb.state() == TABLET_RUNNING) {
      ReplacementPB replacement = ReplacementStatusLocked(t, health);
      if (replacement.step() != ReplacementPB::UNKNOWN_STEP) {
        *out->mutable_replacement() = std::move(replacement);
      }
    }
    for (const std::string& uuid : t.Members()) {
      auto* r = out->add_replicas();
      r->set_ts_uuid(uuid);
      if (auto ts = ts_manager_->Lookup(uuid)) {
        r->mutable_ts_info()->set_permanent_uuid(uuid);
        *r->mutable_ts_info()->mutable_rpc_addresses() = ts->registration.rpc_addresses();
        r->set_ts_live(ts->live);
      }
      r->set_role(t.RoleOf(uuid));
      auto st = t.replica_states.find(uuid);
      if (st != t.replica_states.end()) {
        r->set_reported(true);
        *r->mutable_consensus() = st->second;
      }
    }
  }
}

}  // namespace nyala::master
