#include "master/table_locations_cache.h"

#include "common/coding.h"

namespace nyala::master {

namespace {
void PutLengthPrefixed(std::string* dst, const std::string& s) {
  uint8_t buf[10];
  uint8_t* end = EncodeVarint64(buf, s.size());
  dst->append(reinterpret_cast<const char*>(buf), end - buf);
  dst->append(s);
}
}  // namespace

std::string TableLocationsCacheKey::Encode() const {
  std::string out;
  out.reserve(table_id.size() + first_tablet_start.size() + partition_key_end.size() + 16);
  PutLengthPrefixed(&out, table_id);
  PutLengthPrefixed(&out, first_tablet_start);
  PutLengthPrefixed(&out, partition_key_end);
  out.push_back(max_returned_locations.has_value() ? 1 : 0);
  const uint32_t max = max_returned_locations.value_or(0);
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(char((max >> shift) & 0xff));
  out.push_back(intern_ts_infos ? 1 : 0);
  return out;
}

TableLocationsCache::TableLocationsCache(size_t capacity_bytes, MetricRegistry* metrics)
    : capacity_bytes_(capacity_bytes),
      hits_(metrics->FindOrCreateCounter("table_locations_cache_hits_total",
                                         "GetTableLocations answered from the cache")),
      misses_(metrics->FindOrCreateCounter("table_locations_cache_misses_total",
                                           "GetTableLocations lookups not found in the cache")),
      inserts_(metrics->FindOrCreateCounter("table_locations_cache_inserts_total",
                                            "Responses added to the table-locations cache")),
      evictions_(metrics->FindOrCreateCounter(
          "table_locations_cache_evictions_total",
          "Entries evicted from the table-locations cache to stay within its capacity")),
      memory_usage_(metrics->FindOrCreateGauge(
          "table_locations_cache_memory_bytes",
          "Bytes (keys + serialized responses) held by the table-locations cache")) {}

std::shared_ptr<const std::string> TableLocationsCache::Lookup(const std::string& encoded_key) {
  {
    MutexLock l(mu_);
    auto it = by_key_.find(encoded_key);
    if (it != by_key_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      std::shared_ptr<const std::string> v = it->second->value;
      hits_->Increment();
      return v;
    }
  }
  misses_->Increment();
  return nullptr;
}

void TableLocationsCache::Insert(const std::string& table_id, const std::string& encoded_key,
                                 std::shared_ptr<const std::string> value) {
  const size_t charge = encoded_key.size() + value->size();
  if (charge > capacity_bytes_) return;
  MutexLock l(mu_);
  if (auto it = by_key_.find(encoded_key); it != by_key_.end()) EraseLocked(it->second);
  lru_.push_front(Entry{encoded_key, table_id, std::move(value)});
  by_key_.emplace(encoded_key, lru_.begin());
  keys_by_table_[table_id].insert(encoded_key);
  usage_ += charge;
  inserts_->Increment();
  while (usage_ > capacity_bytes_ && !lru_.empty()) {
    EraseLocked(std::prev(lru_.end()));
    evictions_->Increment();
  }
  memory_usage_->Set(int64_t(usage_));
}

void TableLocationsCache::EraseLocked(LruList::iterator it) {
  usage_ -= it->charge();
  auto t = keys_by_table_.find(it->table_id);
  if (t != keys_by_table_.end()) {
    t->second.erase(it->key);
    if (t->second.empty()) keys_by_table_.erase(t);
  }
  by_key_.erase(it->key);
  lru_.erase(it);
}

void TableLocationsCache::InvalidateTable(const std::string& table_id) {
  MutexLock l(mu_);
  auto t = keys_by_table_.find(table_id);
  if (t == keys_by_table_.end()) return;
  std::unordered_set<std::string> keys = std::move(t->second);
  keys_by_table_.erase(t);
  for (const auto& k : keys) {
    auto it = by_key_.find(k);
    if (it == by_key_.end()) continue;
    usage_ -= it->second->charge();
    lru_.erase(it->second);
    by_key_.erase(it);
  }
  memory_usage_->Set(int64_t(usage_));
}

size_t TableLocationsCache::memory_usage() const {
  MutexLock l(mu_);
  return usage_;
}

size_t TableLocationsCache::num_entries() const {
  MutexLock l(mu_);
  return lru_.size();
}

}  // namespace nyala::master
