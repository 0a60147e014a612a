// SysCatalog: the master's durable catalog, one RocksDB under the first
// --fs_data_dirs entry (subdirectory "sys_catalog"). It maps (entry type, id) to a
// serialized SysTableEntryPB, SysTabletEntryPB or SysTServerStateEntryPB (master.proto). Every
// Write() is one RocksDB WriteBatch with sync=true: all of its entries are on disk, or none, when
// it returns, so the catalog manager writes here first and changes its in-memory state only after a
// successful Write().
//
// The only file of the master that includes RocksDB is sys_catalog.cc.
//
// Thread-safety: thread-safe (RocksDB is). Callers serialise their read-modify-
// write sequences themselves (CatalogManager's write lock).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"
#include "common/status.h"
#include "master/master.pb.h"

namespace rocksdb {
class DB;
}

namespace nyala::master {

// A set of changes written atomically by SysCatalog::Write.
struct SysCatalogBatch {
  std::vector<std::pair<std::string, SysTableEntryPB>> put_tables;                 // id, entry
  std::vector<std::pair<std::string, SysTabletEntryPB>> put_tablets;               // id, entry
  std::vector<std::string> delete_tablets;                                         // ids
  std::vector<std::pair<std::string, SysTServerStateEntryPB>> put_tserver_states;  // uuid
  std::vector<std::string> delete_tserver_states;                                  // uuids
  bool empty() const {
    return put_tables.empty() && put_tablets.empty() && delete_tablets.empty() &&
           put_tserver_states.empty() && delete_tserver_states.empty();
  }
};

class SysCatalog {
 public:
  // Key prefixes: one byte of entry type, then the id.
  static constexpr char kTableEntry = 1;
  static constexpr char kTabletEntry = 2;
  static constexpr char kTServerStateEntry = 3;

  // Opens (creating if missing) the catalog in `dir`.
  static Result<std::unique_ptr<SysCatalog>> Open(const std::string& dir);
  ~SysCatalog();
  SysCatalog(const SysCatalog&) = delete;
  SysCatalog& operator=(const SysCatalog&) = delete;

  // Writes `batch` durably (sync=true) and atomically.
  Status Write(const SysCatalogBatch& batch);

  // Calls `fn` for every stored entry of that type, in id order. Corruption if an
  // entry does not parse; the first non-OK status from `fn` stops the walk.
  Status VisitTables(const std::function<Status(const std::string& id, SysTableEntryPB&&)>& fn);
  Status VisitTablets(const std::function<Status(const std::string& id, SysTabletEntryPB&&)>& fn);
  Status VisitTServerStates(
      const std::function<Status(const std::string& uuid, SysTServerStateEntryPB&&)>& fn);

  const std::string& dir() const { return dir_; }

 private:
  SysCatalog(std::string dir, std::unique_ptr<rocksdb::DB> db);
  Status Visit(char type, const std::function<Status(const std::string&, std::string_view)>& fn);

  const std::string dir_;
  const std::unique_ptr<rocksdb::DB> db_;
};

}  // namespace nyala::master
