#include "master/sys_catalog.h"
#include "common/status.h"

#include <glog/logging.h>
#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <rocksdb/write_batch.h>

namespace nyala::master {

namespace {

// The one place RocksDB statuses become ours.
Status FromRocks(const rocksdb::Status& s, std::string_view context) {
  if (s.ok()) return Status::OK();
  std::string msg = std::string(context) + ": " + s.ToString();
  if (s.IsCorruption()) return Status::Corruption(msg);
  if (s.IsNotFound()) return Status::NotFound(msg);
  if (s.IsIOError()) return Status::IOError(msg);
  if (s.IsInvalidArgument()) return Status::InvalidArgument(msg);
  return Status::RuntimeError(msg);
}

std::string Key(char type, const std::string& id) {
  std::string k;
  k.reserve(1 + id.size());
  k.push_back(type);
  k += id;
  return k;
}

template <typename PB>
Status ParseEntry(const std::string& id, std::string_view bytes, PB* pb) {
  if (!pb->ParseFromArray(bytes.data(), int(bytes.size()))) {
    return Status::Corruption("sys catalog: unparseable " + pb->GetTypeName() + " for id", id);
  }
  return Status::OK();
}

}  // namespace

SysCatalog::SysCatalog(std::string dir, std::unique_ptr<rocksdb::DB> db)
    : dir_(std::move(dir)), db_(std::move(db)) {}

SysCatalog::~SysCatalog() {
  if (db_) WARN_NOT_OK(FromRocks(db_->Close(), "close"), "sys catalog close");
}

Result<std::unique_ptr<SysCatalog>> SysCatalog::Open(const std::string& dir) {
  rocksdb::Options options;
  options.create_if_missing = true;
  options.max_open_files = 64;
  options.keep_log_file_num = 4;
  rocksdb::DB* raw = nullptr;
  RETURN_NOT_OK(FromRocks(rocksdb::DB::Open(options, dir, &raw), "open sys catalog " + dir));
  return std::unique_ptr<SysCatalog>(new SysCatalog(dir, std::unique_ptr<rocksdb::DB>(raw)));
}

Status SysCatalog::Write(const SysCatalogBatch& batch) {
  rocksdb::WriteBatch wb;
  std::string value;
  for (const auto& [id, pb] : batch.put_tables) {
    if (!pb.SerializeToString(&value)) return Status::RuntimeError("serialize table " + id);
    RETURN_NOT_OK(FromRocks(wb.Put(Key(kTableEntry, id), value), "batch"));
  }
  for (const auto& [id, pb] : batch.put_tablets) {
    if (!pb.SerializeToString(&value)) return Status::RuntimeError("serialize tablet " + id);
    RETURN_NOT_OK(FromRocks(wb.Put(Key(kTabletEntry, id), value), "batch"));
  }
  for (const auto& id : batch.delete_tablets) {
    RETURN_NOT_OK(FromRocks(wb.Delete(Key(kTabletEntry, id)), "batch"));
  }
  for (const auto& [uuid, pb] : batch.put_tserver_states) {
    if (!pb.SerializeToString(&value)) return Status::RuntimeError("serialize server " + uuid);
    RETURN_NOT_OK(FromRocks(wb.Put(Key(kTServerStateEntry, uuid), value), "batch"));
  }
  for (const auto& uuid : batch.delete_tserver_states) {
    RETURN_NOT_OK(FromRocks(wb.Delete(Key(kTServerStateEntry, uuid)), "batch"));
  }
  rocksdb::WriteOptions wo;
  wo.sync = true;
  return FromRocks(db_->Write(wo, &wb), "sys catalog write");
}

Status SysCatalog::Visit(char type,
                         const std::function<Status(const std::string&, std::string_view)>& fn) {
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
  const std::string prefix(1, type);
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    std::string id = it->key().ToString().substr(1);
    RETURN_NOT_OK(fn(id, std::string_view(it->value().data(), it->value().size())));
  }
  return FromRocks(it->status(), "sys catalog scan");
}

Status SysCatalog::VisitTables(
    const std::function<Status(const std::string&, SysTableEntryPB&&)>& fn) {
  return Visit(kTableEntry, [&](const std::string& id, std::string_view bytes) {
    SysTableEntryPB pb;
    RETURN_NOT_OK(ParseEntry(id, bytes, &pb));
    return fn(id, std::move(pb));
  });
}

Status SysCatalog::VisitTablets(
    const std::function<Status(const std::string&, SysTabletEntryPB&&)>& fn) {
  return Visit(kTabletEntry, [&](const std::string& id, std::string_view bytes) {
    SysTabletEntryPB pb;
    RETURN_NOT_OK(ParseEntry(id, bytes, &pb));
    return fn(id, std::move(pb));
  });
}

Status SysCatalog::VisitTServerStates(
    const std::function<Status(const std::string&, SysTServerStateEntryPB&&)>& fn) {
  return Visit(kTServerStateEntry, [&](const std::string& uuid, std::string_view bytes) {
    SysTServerStateEntryPB pb;
    RETURN_NOT_OK(ParseEntry(uuid, bytes, &pb));
    return fn(uuid, std::move(pb));
  });
}

}  // namespace nyala::master
