#include "master/ts_manager.h"

#include <gflags/gflags.h>
#include <gtest/gtest.h>

#include "common/test_util.h"

DECLARE_int32(tserver_unresponsive_timeout_ms);

namespace nyala::master {

namespace {
TSHeartbeatRequestPB Beat(const std::string& uuid, int64_t seqno, bool registration,
                          bool full_report, std::vector<std::string> running = {}) {
  TSHeartbeatRequestPB req;
  req.mutable_common()->set_permanent_uuid(uuid);
  req.mutable_common()->set_instance_seqno(seqno);
  if (registration) {
    auto* hp = req.mutable_registration()->add_rpc_addresses();
    hp->set_host("127.0.0.1");
    hp->set_port(7050);
  }
  req.mutable_tablet_report()->set_is_incremental(!full_report);
  for (const auto& id : running) {
    auto* t = req.mutable_tablet_report()->add_updated_tablets();
    t->set_tablet_id(id);
    t->set_state(TABLET_RUNNING);
  }
  return req;
}
}  // namespace

TEST(TSManagerTest, UnknownServerWithoutRegistrationIsAskedToRegister) {
  TSManager m;
  auto out = m.Heartbeat(Beat("a", 1, false, false), MonoTime::Now(), true);
  EXPECT_TRUE(out.needs_reregister);
  EXPECT_TRUE(out.needs_full_report);
  EXPECT_FALSE(out.process_report);
  EXPECT_FALSE(m.Lookup("a").has_value());
}

TEST(TSManagerTest, RegistrationIsVisibleAndNeedsTheExclusiveLock) {
  TSManager m;
  const MonoTime now = MonoTime::Now();
  auto out = m.Heartbeat(Beat("a", 1, true, true, {"t1", "t2"}), now, false);
  EXPECT_TRUE(out.needs_exclusive);
  EXPECT_FALSE(m.Lookup("a").has_value());  // nothing changed without the lock
  out = m.Heartbeat(Beat("a", 1, true, true, {"t1", "t2"}), now, true);
  EXPECT_TRUE(out.visible_change);
  EXPECT_TRUE(out.process_report);
  EXPECT_FALSE(out.needs_full_report);  // the first beat carried one
  auto d = m.Lookup("a");
  ASSERT_TRUE(d.has_value());
  EXPECT_TRUE(d->live);
  EXPECT_EQ("127.0.0.1:7050", d->RpcAddressString());
  EXPECT_EQ(2u, d->running_tablets.size());
  EXPECT_EQ(1, m.NumLiveServers());

  // Same registration again: not visible, no lock needed.
  out = m.Heartbeat(Beat("a", 1, true, false), now, false);
  EXPECT_FALSE(out.needs_exclusive);
  EXPECT_FALSE(out.visible_change);
}

TEST(TSManagerTest, RegistrationWithoutFullReportAsksForOne) {
  TSManager m;
  auto out = m.Heartbeat(Beat("a", 1, true, false), MonoTime::Now(), true);
  EXPECT_TRUE(out.needs_full_report);
  EXPECT_FALSE(out.process_report);  // incremental before any full report is ignored
  out = m.Heartbeat(Beat("a", 1, false, true, {"t1"}), MonoTime::Now(), true);
  EXPECT_FALSE(out.needs_full_report);
  EXPECT_TRUE(out.process_report);
  EXPECT_EQ(1u, m.Lookup("a")->running_tablets.size());
}

TEST(TSManagerTest, NewInstanceMustReregister) {
  TSManager m;
  (void)m.Heartbeat(Beat("a", 1, true, true), MonoTime::Now(), true);
  auto out = m.Heartbeat(Beat("a", 2, false, false), MonoTime::Now(), true);
  EXPECT_TRUE(out.needs_reregister);
  out = m.Heartbeat(Beat("a", 2, true, true), MonoTime::Now(), true);
  EXPECT_FALSE(out.needs_reregister);
  EXPECT_EQ(2, m.Lookup("a")->instance_seqno);
}

TEST(TSManagerTest, ServerWhoseRaftPeerIdCollidesIsRefused) {
  TSManager m;
  const std::string a = "0123456789abcdef0000000000000000";
  const std::string b = "0123456789abcdef1111111111111111";  // same first 64 bits
  ASSERT_OK(m.Heartbeat(Beat(a, 1, true, true), MonoTime::Now(), true).error);
  for (bool exclusive : {false, true}) {
    auto out = m.Heartbeat(Beat(b, 1, true, true), MonoTime::Now(), exclusive);
    EXPECT_TRUE(out.error.IsAlreadyPresent()) << out.error.ToString();
    EXPECT_NE(std::string::npos, out.error.ToString().find(a)) << out.error.ToString();
    EXPECT_NE(std::string::npos, out.error.ToString().find("0123456789abcdef"));
    EXPECT_NE(std::string::npos, out.error.ToString().find("new uuid"));
    EXPECT_FALSE(out.process_report);
  }
  EXPECT_FALSE(m.Lookup(b).has_value());
  EXPECT_EQ(1u, m.GetAll().size());
  // The registered one re-registers (a new instance) as before.
  ASSERT_OK(m.Heartbeat(Beat(a, 2, true, true), MonoTime::Now(), true).error);
  ASSERT_OK(
      m.Heartbeat(Beat("0123456789abcdee0000000000000000", 1, true, true), MonoTime::Now(), true)
          .error);
  ASSERT_EQ(2u, m.AllTSInfos().size());
  EXPECT_EQ(7050u, m.AllTSInfos()[0].rpc_addresses(0).port());
}

TEST(TSManagerTest, DeadAfterTimeoutAndLiveAgainOnNextHeartbeat) {
  const int32_t saved = FLAGS_tserver_unresponsive_timeout_ms;
  FLAGS_tserver_unresponsive_timeout_ms = 100;
  TSManager m;
  const MonoTime t0 = MonoTime::Now();
  (void)m.Heartbeat(Beat("a", 1, true, true), t0, true);
  (void)m.Heartbeat(Beat("b", 1, true, true), t0 + MonoDelta::FromMilliseconds(80), true);
  // The clock is passed in: no waiting.
  EXPECT_TRUE(m.ExpiredLiveServers(t0 + MonoDelta::FromMilliseconds(50)).empty());
  auto expired = m.ExpiredLiveServers(t0 + MonoDelta::FromMilliseconds(150));
  ASSERT_EQ(std::vector<std::string>{"a"}, expired);
  EXPECT_TRUE(m.MarkDeadIfExpired("a", t0 + MonoDelta::FromMilliseconds(150)));
  EXPECT_FALSE(m.MarkDeadIfExpired("a", t0 + MonoDelta::FromMilliseconds(150)));  // already dead
  EXPECT_FALSE(m.MarkDeadIfExpired("b", t0 + MonoDelta::FromMilliseconds(150)));  // not expired
  EXPECT_FALSE(m.IsLive("a"));
  EXPECT_FALSE(m.LiveTSInfo("a").has_value());
  EXPECT_TRUE(m.IsLive("b"));
  EXPECT_EQ(1, m.NumLiveServers());

  // Its next heartbeat revives it; that is visible, so it needs the exclusive lock.
  auto out = m.Heartbeat(Beat("a", 1, false, false), t0 + MonoDelta::FromMilliseconds(200), false);
  EXPECT_TRUE(out.needs_exclusive);
  EXPECT_FALSE(m.IsLive("a"));
  out = m.Heartbeat(Beat("a", 1, false, false), t0 + MonoDelta::FromMilliseconds(200), true);
  EXPECT_TRUE(out.visible_change);
  EXPECT_TRUE(m.IsLive("a"));
  FLAGS_tserver_unresponsive_timeout_ms = saved;
}

TEST(TSManagerTest, OnlyADeadServerIsUnregistered) {
  const int32_t saved = FLAGS_tserver_unresponsive_timeout_ms;
  FLAGS_tserver_unresponsive_timeout_ms = 100;
  TSManager m;
  const MonoTime t0 = MonoTime::Now();
  (void)m.Heartbeat(Beat("a", 1, true, true), t0, true);
  EXPECT_TRUE(m.Unregister("nope", t0).IsNotFound());
  // Live, even past its timeout until it is marked dead.
  Status s = m.Unregister("a", t0 + MonoDelta::FromMilliseconds(150));
  EXPECT_TRUE(s.IsIllegalState()) << s.ToString();
  EXPECT_NE(std::string::npos, s.message().find("tablet server a is live (last heartbeat 150 ms"))
      << s.ToString();
  EXPECT_TRUE(m.Lookup("a").has_value());
  ASSERT_TRUE(m.MarkDeadIfExpired("a", t0 + MonoDelta::FromMilliseconds(150)));
  ASSERT_OK(m.Unregister("a", t0 + MonoDelta::FromMilliseconds(150)));
  EXPECT_FALSE(m.Lookup("a").has_value());
  EXPECT_TRUE(m.LivenessOfAll().empty());
  // It heartbeats again: asked to register anew.
  EXPECT_TRUE(m.Heartbeat(Beat("a", 1, false, false), t0, true).needs_reregister);
  FLAGS_tserver_unresponsive_timeout_ms = saved;
}

}  // namespace nyala::master
