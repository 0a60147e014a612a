// Caches serialized GetTableLocations responses, keyed by every request field that
// changes the answer (by value): the table id, the start of the tablet holding
// partition_key_start (so every start key inside one tablet shares an entry),
// partition_key_end, max_returned_locations (unset is not 0) and the intern flag.
// A value is the response already serialized, so a hit is written to the wire
// without building or serializing a protobuf.
//
// LRU over a byte budget: each entry is charged key + value bytes; inserting past
// the capacity evicts from the cold end. An entry larger than the capacity is not
// kept. InvalidateTable() drops every entry of one table; the catalog manager
// calls it, holding its state lock exclusively, before any change to what that
// table's answers would say becomes visible, and inserts only while holding that
// lock shared, so no stale answer can be inserted or found.
//
// Metrics (in the given registry): table_locations_cache_hits_total, _misses_total,
// _inserts_total, _evictions_total (LRU only) and the gauge _memory_bytes (bytes charged).
//
// Thread-safety: thread-safe; mu_ is a leaf lock. Holds no pointers into the catalog.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "common/metrics.h"
#include "common/mutex.h"

namespace nyala::master {

struct TableLocationsCacheKey {
  std::string table_id;
  std::string first_tablet_start;  // partition_key_start of the first tablet returned
  std::string partition_key_end;
  std::optional<uint32_t> max_returned_locations;
  bool intern_ts_infos = false;

  // An unambiguous byte string (length-prefixed fields, presence byte).
  std::string Encode() const;
};

class TableLocationsCache {
 public:
  // `metrics` must outlive the cache.
  TableLocationsCache(size_t capacity_bytes, MetricRegistry* metrics);
  TableLocationsCache(const TableLocationsCache&) = delete;
  TableLocationsCache& operator=(const TableLocationsCache&) = delete;

  // The serialized response for `encoded_key`, or nullptr (a miss). A hit becomes
  // the most recently used entry.
  std::shared_ptr<const std::string> Lookup(const std::string& encoded_key) EXCLUDES(mu_);
  // Adds (or replaces) an entry of `table_id`, evicting as needed.
  void Insert(const std::string& table_id, const std::string& encoded_key,
              std::shared_ptr<const std::string> value) EXCLUDES(mu_);
  // Drops every entry of `table_id`.
  void InvalidateTable(const std::string& table_id) EXCLUDES(mu_);

  size_t capacity_bytes() const { return capacity_bytes_; }
  size_t memory_usage() const EXCLUDES(mu_);
  size_t num_entries() const EXCLUDES(mu_);

  int64_t hits() const { return hits_->value(); }
  int64_t misses() const { return misses_->value(); }
  int64_t inserts() const { return inserts_->value(); }
  int64_t evictions() const { return evictions_->value(); }

 private:
  struct Entry {
    std::string key;
    std::string table_id;
    std::shared_ptr<const std::string> value;
    size_t charge() const { return key.size() + value->size(); }
  };
  using LruList = std::list<Entry>;  // front = most recently used

  void EraseLocked(LruList::iterator it) REQUIRES(mu_);

  const size_t capacity_bytes_;
  Counter* const hits_;
  Counter* const misses_;
  Counter* const inserts_;
  Counter* const evictions_;
  Gauge* const memory_usage_;

  mutable Mutex mu_;
  LruList lru_ GUARDED_BY(mu_);
  std::unordered_map<std::string, LruList::iterator> by_key_ GUARDED_BY(mu_);
  std::unordered_map<std::string, std::unordered_set<std::string>> keys_by_table_ GUARDED_BY(mu_);
  size_t usage_ GUARDED_BY(mu_) = 0;
};

}  // namespace nyala::master
