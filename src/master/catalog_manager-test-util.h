// The fixture of the CatalogManager tests (catalog_manager-test.cc,
// catalog_manager_replicas-test.cc): a CatalogManager over a real sys catalog in the
// test's directory and fake tablet servers (master-test-util.h) on real messengers;
// heartbeats are fed directly and the background pass is run by the test. Include
// only from *-test.cc.
#pragma once

#include <gflags/gflags.h>
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/test_util.h"
#include "master/catalog_manager.h"
#include "master/master-test-util.h"

DECLARE_int32(tserver_unresponsive_timeout_ms);
DECLARE_int32(tablet_creation_timeout_ms);

namespace nyala::master {

class CatalogManagerTest : public NyalaTest {
 protected:
  void SetUp() override {
    NyalaTest::SetUp();
    saved_unresponsive_ = FLAGS_tserver_unresponsive_timeout_ms;
    saved_creation_ = FLAGS_tablet_creation_timeout_ms;
    ASSERT_OK(OpenCatalog());
    for (int i = 0; i < 3; i++) ASSERT_NO_FATAL_FAILURE(AddServer());
  }
  void TearDown() override {
    CloseCatalog();
    servers_.clear();
    FLAGS_tserver_unresponsive_timeout_ms = saved_unresponsive_;
    FLAGS_tablet_creation_timeout_ms = saved_creation_;
    NyalaTest::TearDown();
  }

  Status OpenCatalog() {
    ASSIGN_OR_RETURN(sys_, SysCatalog::Open(test_dir() + "/sys"));
    ts_manager_ = std::make_unique<TSManager>();
    rpc::MessengerOptions o;
    o.name = "master-client";
    o.num_reactors = 1;
    ASSIGN_OR_RETURN(messenger_, rpc::Messenger::Create(o));
    cm_ = std::make_unique<CatalogManager>(sys_.get(), ts_manager_.get(), messenger_, &metrics_);
    return cm_->Load();
  }
  void CloseCatalog() {
    if (cm_) cm_->Shutdown();
    if (messenger_) messenger_->Shutdown();
    cm_.reset();
    ts_manager_.reset();
    sys_.reset();
  }
  void RestartCatalog() {
    CloseCatalog();
    ASSERT_OK(OpenCatalog());
  }

  void AddServer() {
    servers_.push_back(std::make_unique<FakeTabletServer>());
    servers_.back()->JoinCluster(cluster_);
    ASSERT_OK(servers_.back()->Start());
    TSHeartbeatResponsePB resp = Heartbeat(*servers_.back(), true, true);
    ASSERT_FALSE(resp.has_error());
  }

  TSHeartbeatResponsePB Heartbeat(FakeTabletServer& ts, bool registration, bool full) {
    TSHeartbeatResponsePB resp;
    cm_->TSHeartbeat(ts.MakeHeartbeat(registration, full), &resp);
    return resp;
  }
  // Every server in `live` heartbeats, registering when asked to.
  void HeartbeatAll(const std::set<int>& skip = {}) {
    for (int i = 0; i < int(servers_.size()); i++) {
      if (skip.count(i)) continue;
      auto resp = Heartbeat(*servers_[i], false, false);
      if (resp.needs_reregister() || resp.needs_full_tablet_report()) {
        resp = Heartbeat(*servers_[i], true, true);
      }
    }
  }

  std::string CreateTable(const CreateTableRequestPB& req) {
    CreateTableResponsePB resp;
    cm_->CreateTable(req, &resp);
    EXPECT_FALSE(resp.has_error()) << resp.error().ShortDebugString();
    return resp.table_id();
  }
  MasterErrorPB CreateTableError(const CreateTableRequestPB& req) {
    CreateTableResponsePB resp;
    cm_->CreateTable(req, &resp);
    EXPECT_TRUE(resp.has_error()) << req.name();
    return resp.error();
  }
  void WaitRunning(const std::string& table_id) {
    ASSERT_EVENTUALLY(MonoDelta::FromSeconds(20), [&] {
      cm_->RunBackgroundPassForTests();
      HeartbeatAll(down_);  // reports of the tablets created: their leaders
      IsCreateTableDoneRequestPB req;
      req.mutable_table()->set_table_id(table_id);
      IsCreateTableDoneResponsePB resp;
      cm_->IsCreateTableDone(req, &resp);
      ASSERT_FALSE(resp.has_error());
      ASSERT_TRUE(resp.done()) << resp.tablets_running() << "/" << resp.tablets_total();
      // Running needs only the leader's report; wait for the followers' too, so that
      // the roles are known (their CreateTablet calls may have finished later).
      GetTableLocationsRequestPB loc_req;
      loc_req.mutable_table()->set_table_id(table_id);
      const auto locs = Locations(loc_req, false);
      for (const auto& loc : locs.tablet_locations()) {
        for (const auto& r : loc.replicas()) ASSERT_NE(UNKNOWN_ROLE, r.role()) << loc.tablet_id();
      }
    });
  }
  GetTableLocationsResponsePB Locations(const GetTableLocationsRequestPB& req,
                                        bool use_cache = true) {
    GetTableLocationsResponsePB resp;
    EXPECT_TRUE(resp.ParseFromString(*cm_->GetTableLocations(req, use_cache)));
    return resp;
  }
  GetTableLocationsResponsePB Locations(const std::string& table_id) {
    GetTableLocationsRequestPB req;
    req.mutable_table()->set_table_id(table_id);
    return Locations(req);
  }
  FakeTabletServer* ServerByUuid(const std::string& uuid) {
    for (auto& s : servers_) {
      if (s->uuid() == uuid) return s.get();
    }
    return nullptr;
  }

  // The locations answer of `tablet_id` in `table_id`'s locations (uncached when
  // !use_cache); fails the test when it is missing.
  TabletLocationsPB TabletLocations(const std::string& table_id, const std::string& tablet_id,
                                    bool use_cache = true) {
    GetTableLocationsRequestPB req;
    req.mutable_table()->set_table_id(table_id);
    const auto locs = Locations(req, use_cache);
    for (const auto& loc : locs.tablet_locations()) {
      if (loc.tablet_id() == tablet_id) return loc;
    }
    ADD_FAILURE() << "tablet " << tablet_id << " not in the locations";
    return TabletLocationsPB();
  }

  std::set<int> down_;  // servers WaitRunning does not heartbeat
  int32_t saved_unresponsive_ = 0;
  int32_t saved_creation_ = 0;
  MetricRegistry metrics_;
  std::unique_ptr<SysCatalog> sys_;
  std::unique_ptr<TSManager> ts_manager_;
  std::shared_ptr<rpc::Messenger> messenger_;
  std::unique_ptr<CatalogManager> cm_;
  std::vector<std::unique_ptr<FakeTabletServer>> servers_;
  // Shared by the servers: their leaders' configuration changes, in order.
  std::shared_ptr<FakeCluster> cluster_ = std::make_shared<FakeCluster>();
};

}  // namespace nyala::master
