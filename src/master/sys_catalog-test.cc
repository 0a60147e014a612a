#include "master/sys_catalog.h"

#include <gtest/gtest.h>

#include "common/test_util.h"

namespace nyala::master {

class SysCatalogTest : public NyalaTest {};

TEST_F(SysCatalogTest, EntriesSurviveReopenAndBatchesApplyWhole) {
  const std::string dir = test_dir() + "/sys";
  {
    auto cat = SysCatalog::Open(dir);
    ASSERT_OK(cat.status());
    SysCatalogBatch b;
    SysTableEntryPB table;
    table.set_name("t1");
    table.set_state(TABLE_CREATING);
    table.set_num_replicas(3);
    b.put_tables.emplace_back("tid1", table);
    for (int i = 0; i < 3; i++) {
      SysTabletEntryPB tablet;
      tablet.set_table_id("tid1");
      tablet.set_state(TABLET_CREATING);
      tablet.add_replica_uuids("ts" + std::to_string(i));
      b.put_tablets.emplace_back("tablet" + std::to_string(i), tablet);
    }
    ASSERT_OK((*cat)->Write(b));
    // An update and a delete in one batch.
    SysCatalogBatch b2;
    table.set_state(TABLE_RUNNING);
    b2.put_tables.emplace_back("tid1", table);
    b2.delete_tablets.push_back("tablet1");
    ASSERT_OK((*cat)->Write(b2));
  }
  auto cat = SysCatalog::Open(dir);
  ASSERT_OK(cat.status());
  std::vector<std::pair<std::string, SysTableEntryPB>> tables;
  ASSERT_OK((*cat)->VisitTables([&](const std::string& id, SysTableEntryPB&& pb) {
    tables.emplace_back(id, std::move(pb));
    return Status::OK();
  }));
  ASSERT_EQ(1u, tables.size());
  EXPECT_EQ("tid1", tables[0].first);
  EXPECT_EQ("t1", tables[0].second.name());
  EXPECT_EQ(TABLE_RUNNING, tables[0].second.state());
  EXPECT_EQ(3, tables[0].second.num_replicas());
  std::vector<std::string> tablet_ids;
  ASSERT_OK((*cat)->VisitTablets([&](const std::string& id, SysTabletEntryPB&& pb) {
    EXPECT_EQ("tid1", pb.table_id());
    tablet_ids.push_back(id);
    return Status::OK();
  }));
  EXPECT_EQ((std::vector<std::string>{"tablet0", "tablet2"}), tablet_ids);
}

TEST_F(SysCatalogTest, VisitorErrorStopsTheWalk) {
  auto cat = SysCatalog::Open(test_dir() + "/sys");
  ASSERT_OK(cat.status());
  SysCatalogBatch b;
  for (int i = 0; i < 5; i++) b.put_tables.emplace_back("t" + std::to_string(i), SysTableEntryPB());
  ASSERT_OK((*cat)->Write(b));
  int seen = 0;
  Status s = (*cat)->VisitTables([&](const std::string&, SysTableEntryPB&&) {
    return ++seen == 2 ? Status::Aborted("stop") : Status::OK();
  });
  EXPECT_TRUE(s.IsAborted()) << s.ToString();
  EXPECT_EQ(2, seen);
}

// Tablet-server states have their own key space: they survive a reopen, a delete
// removes one, and neither tables nor tablets see them.
TEST_F(SysCatalogTest, TServerStatesSurviveReopenApartFromTablets) {
  const std::string dir = test_dir() + "/sys";
  {
    auto cat = SysCatalog::Open(dir);
    ASSERT_OK(cat.status());
    SysCatalogBatch b;
    SysTServerStateEntryPB st;
    st.set_state(MAINTENANCE_MODE);
    st.set_time_entered_micros(42);
    b.put_tserver_states.emplace_back("ts-a", st);
    b.put_tserver_states.emplace_back("ts-b", st);
    SysTabletEntryPB tablet;
    tablet.add_replica_uuids("ts-a");
    tablet.add_learner_uuids("ts-b");
    b.put_tablets.emplace_back("tablet", tablet);
    ASSERT_OK((*cat)->Write(b));
    SysCatalogBatch b2;
    b2.delete_tserver_states.push_back("ts-a");
    ASSERT_OK((*cat)->Write(b2));
  }
  auto cat = SysCatalog::Open(dir);
  ASSERT_OK(cat.status());
  std::vector<std::string> uuids;
  ASSERT_OK((*cat)->VisitTServerStates([&](const std::string& uuid, SysTServerStateEntryPB&& pb) {
    EXPECT_EQ(MAINTENANCE_MODE, pb.state());
    EXPECT_EQ(42, pb.time_entered_micros());
    uuids.push_back(uuid);
    return Status::OK();
  }));
  EXPECT_EQ((std::vector<std::string>{"ts-b"}), uuids);
  int tablets = 0;
  ASSERT_OK((*cat)->VisitTablets([&](const std::string& id, SysTabletEntryPB&& pb) {
    EXPECT_EQ("tablet", id);
    EXPECT_EQ(1, pb.learner_uuids_size());
    tablets++;
    return Status::OK();
  }));
  EXPECT_EQ(1, tablets);
}

TEST_F(SysCatalogTest, SecondOpenOfTheSameDirFails) {
  auto a = SysCatalog::Open(test_dir() + "/sys");
  ASSERT_OK(a.status());
  auto b = SysCatalog::Open(test_dir() + "/sys");
  EXPECT_FALSE(b.ok());  // RocksDB's LOCK file
}

}  // namespace nyala::master
