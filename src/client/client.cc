// ClientBuilder, Client and its catalog calls (master RPCs).
#include "nyala/client.h"
#include "common/result.h"

#include <algorithm>
#include <random>

#include "client/client-internal.h"
#include "master/master.pb.h"

namespace nyala::client {

using internal::ClientData;

namespace {
constexpr uint16_t kDefaultMasterPort = 7051;

std::string RandomClientId() {
  std::random_device rd;
  std::mt19937_64 rng((uint64_t(rd()) << 32) ^ rd());
  static const char kHex[] = "0123456789abcdef";
  std::string id;
  for (int i = 0; i < 32; i++) id.push_back(kHex[rng() % 16]);
  return id;
}
}  // namespace

namespace internal {

ClientData::ClientData(std::shared_ptr<rpc::Messenger> messenger,
                       std::vector<rpc::Sockaddr> masters, MonoDelta rpc_timeout,
                       MonoDelta admin_timeout, std::string client_id, bool share_gets)
    : messenger_(std::move(messenger)),
      rpc_timeout_(rpc_timeout),
      admin_timeout_(admin_timeout),
      share_gets_(share_gets),
      replica_pick_(std::hash<std::string>()(client_id)),
      master_(messenger_, std::move(masters), &timers_, rpc_timeout),
      meta_cache_(&master_),
      request_ids_(std::move(client_id)) {}

ClientData::~ClientData() {
  timers_.Shutdown();
  messenger_->Shutdown();
}

std::shared_ptr<const Schema> ClientData::NewestSchema(const std::string& table_id) const {
  MutexLock l(schemas_mu_);
  auto it = schemas_.find(table_id);
  return it == schemas_.end() ? nullptr : it->second;
}

std::shared_ptr<const Schema> ClientData::NoteSchema(const std::string& table_id,
                                                     std::shared_ptr<const Schema> schema) {
  MutexLock l(schemas_mu_);
  std::shared_ptr<const Schema>& kept = schemas_[table_id];
  if (!kept || kept->version() < schema->version()) kept = std::move(schema);
  return kept;
}

}  // namespace internal

// ---- ClientBuilder ------------------------------------------------------------------

struct ClientBuilder::Options {
  std::vector<std::string> masters;
  MonoDelta rpc_timeout = MonoDelta::FromSeconds(10);
  MonoDelta admin_timeout = MonoDelta::FromSeconds(30);
  int num_reactors = 1;
  bool share_gets = true;
};

ClientBuilder::ClientBuilder() : opts_(std::make_unique<Options>()) {}
ClientBuilder::~ClientBuilder() = default;

ClientBuilder& ClientBuilder::add_master_server_addr(std::string addr) {
  opts_->masters.push_back(std::move(addr));
  return *this;
}
ClientBuilder& ClientBuilder::master_server_addrs(std::vector<std::string> addrs) {
  opts_->masters = std::move(addrs);
  return *this;
}
ClientBuilder& ClientBuilder::default_rpc_timeout(MonoDelta timeout) {
  opts_->rpc_timeout = timeout;
  return *this;
}
ClientBuilder& ClientBuilder::default_admin_operation_timeout(MonoDelta timeout) {
  opts_->admin_timeout = timeout;
  return *this;
}
ClientBuilder& ClientBuilder::num_reactors(int n) {
  opts_->num_reactors = n;
  return *this;
}
ClientBuilder& ClientBuilder::share_concurrent_gets(bool share) {
  opts_->share_gets = share;
  return *this;
}

Result<std::shared_ptr<Client>> ClientBuilder::Build() {
  std::vector<rpc::Sockaddr> masters;
  for (const std::string& s : opts_->masters) {
    ASSIGN_OR_RETURN(std::vector<rpc::HostPort> hps,
                     rpc::HostPort::ParseList(s, kDefaultMasterPort));
    for (const rpc::HostPort& hp : hps) {
      ASSIGN_OR_RETURN(std::vector<rpc::Sockaddr> addrs, hp.Resolve());
      if (addrs.empty()) return Status::NetworkError("cannot resolve master", hp.ToString());
      masters.push_back(addrs.front());
    }
  }
  if (masters.empty()) return Status::InvalidArgument("no master address given");
  if (opts_->rpc_timeout <= MonoDelta() || opts_->admin_timeout <= MonoDelta()) {
    return Status::InvalidArgument("timeouts must be positive");
  }
  rpc::MessengerOptions mopts;
  mopts.name = "client";
  mopts.num_reactors = std::max(1, opts_->num_reactors);
  ASSIGN_OR_RETURN(std::shared_ptr<rpc::Messenger> messenger, rpc::Messenger::Create(mopts));
  auto data =
      std::make_unique<ClientData>(std::move(messenger), std::move(masters), opts_->rpc_timeout,
                                   opts_->admin_timeout, RandomClientId(), opts_->share_gets);
  return std::shared_ptr<Client>(new Client(std::move(data)));
}

// ---- Client -------------------------------------------------------------------------

Client::Client(std::unique_ptr<ClientData> data) : data_(std::move(data)) {}
Client::~Client() = default;

MonoDelta Client::default_rpc_timeout() const { return data_->rpc_timeout(); }
MonoDelta Client::default_admin_operation_timeout() const { return data_->admin_timeout(); }

std::unique_ptr<TableCreator> Client::NewTableCreator() {
  return std::unique_ptr<TableCreator>(new TableCreator(shared_from_this()));
}

std::shared_ptr<Session> Client::NewSession() {
  return std::shared_ptr<Session>(new Session(shared_from_this()));
}

Result<bool> Client::IsCreateTableInProgress(const std::string& name) {
  master::IsCreateTableDoneRequestPB req;
  req.mutable_table()->set_table_name(name);
  master::IsCreateTableDoneResponsePB resp;
  RETURN_NOT_OK(data_->master()->Call(&master::MasterServiceProxy::IsCreateTableDoneAsync, req,
                                      &resp, data_->AdminDeadline()));
  return !resp.done();
}

Status Client::DeleteTable(const std::string& name) {
  master::DeleteTableRequestPB req;
  req.mutable_table()->set_table_name(name);
  master::DeleteTableResponsePB resp;
  return data_->master()->Call(&master::MasterServiceProxy::DeleteTableAsync, req, &resp,
                               data_->AdminDeadline());
}

Result<std::vector<std::string>> Client::ListTables(const std::string& filter) {
  master::ListTablesRequestPB req;
  req.set_name_filter(filter);
  master::ListTablesResponsePB resp;
  RETURN_NOT_OK(data_->master()->Call(&master::MasterServiceProxy::ListTablesAsync, req, &resp,
                                      data_->AdminDeadline()));
  std::vector<std::string> names;
  for (const auto& t : resp.tables()) names.push_back(t.name());
  std::sort(names.begin(), names.end());
  return names;
}

namespace internal {
ClientData* DataOf(const Client& client) { return client.data_.get(); }
}  // namespace internal

Result<bool> Client::TableExists(const std::string& name) {
  ASSIGN_OR_RETURN(std::vector<std::string> tables, ListTables(name));
  return std::find(tables.begin(), tables.end(), name) != tables.end();
}

Result<std::shared_ptr<Table>> Client::OpenTable(const std::string& name) {
  master::GetTableSchemaRequestPB req;
  req.mutable_table()->set_table_name(name);
  master::GetTableSchemaResponsePB resp;
  RETURN_NOT_OK(data_->master()->Call(&master::MasterServiceProxy::GetTableSchemaAsync, req, &resp,
                                      data_->AdminDeadline()));
  ASSIGN_OR_RETURN(Schema schema, Schema::FromPB(resp.schema()));
  ASSIGN_OR_RETURN(PartitionSchema ps, PartitionSchema::FromPB(resp.partition_schema(), schema));
  const std::string& table_name = resp.table_name().empty() ? name : resp.table_name();
  std::shared_ptr<Table> t(new Table(shared_from_this(), table_name, resp.table_id(),
                                     std::move(schema), std::move(ps), resp.num_replicas()));
  t->comment_ = resp.comment();
  return t;
}

Result<std::vector<TabletServerInfo>> Client::ListTabletServers() {
  master::ListTabletServersRequestPB req;
  master::ListTabletServersResponsePB resp;
  RETURN_NOT_OK(data_->master()->Call(&master::MasterServiceProxy::ListTabletServersAsync, req,
                                      &resp, data_->AdminDeadline()));
  std::vector<TabletServerInfo> out;
  for (const auto& e : resp.servers()) {
    TabletServerInfo info;
    info.uuid = e.instance_id().permanent_uuid();
    if (e.registration().rpc_addresses_size() > 0) {
      const auto& hp = e.registration().rpc_addresses(0);
      info.rpc_address = rpc::HostPort(hp.host(), hp.port()).ToString();
    }
    info.live = e.live();
    info.millis_since_heartbeat = e.millis_since_heartbeat();
    info.num_live_tablets = e.num_live_tablets();
    out.push_back(std::move(info));
  }
  return out;
}

Result<std::vector<TabletInfo>> Client::ListTabletsOfTable(const std::string& name) {
  master::GetTableLocationsRequestPB req;
  req.mutable_table()->set_table_name(name);
  req.set_intern_ts_infos_in_response(true);
  master::GetTableLocationsResponsePB resp;
  RETURN_NOT_OK(data_->master()->Call(&master::MasterServiceProxy::GetTableLocationsAsync, req,
                                      &resp, data_->AdminDeadline()));
  auto replica = [](const master::TSInfoPB& ts, master::ReplicaRolePB role) {
    ReplicaInfo r;
    r.ts_uuid = ts.permanent_uuid();
    if (ts.rpc_addresses_size() > 0) {
      r.rpc_address =
          rpc::HostPort(ts.rpc_addresses(0).host(), ts.rpc_addresses(0).port()).ToString();
    }
    r.is_leader = role == master::LEADER;
    return r;
  };
  std::vector<TabletInfo> out;
  for (const auto& loc : resp.tablet_locations()) {
    TabletInfo t;
    t.tablet_id = loc.tablet_id();
    t.partition = Partition::FromPB(loc.partition());
    for (const auto& r : loc.interned_replicas()) {
      if (r.ts_info_idx() < uint32_t(resp.ts_infos_size())) {
        t.replicas.push_back(replica(resp.ts_infos(r.ts_info_idx()), r.role()));
      }
    }
    for (const auto& r : loc.replicas()) t.replicas.push_back(replica(r.ts_info(), r.role()));
    out.push_back(std::move(t));
  }
  return out;
}

Result<MasterStatus> Client::GetMasterStatus() {
  master::GetMasterRegistrationRequestPB req;
  master::GetMasterRegistrationResponsePB resp;
  RETURN_NOT_OK(data_->master()->Call(&master::MasterServiceProxy::GetMasterRegistrationAsync, req,
                                      &resp, MonoTime::Now() + data_->rpc_timeout()));
  auto join = [](const auto& hps) {
    std::string s;
    for (const auto& hp : hps) {
      if (!s.empty()) s += ",";
      s += rpc::HostPort(hp.host(), hp.port()).ToString();
    }
    return s;
  };
  MasterStatus st;
  st.uuid = resp.instance_id().permanent_uuid();
  st.rpc_addresses = join(resp.rpc_addresses());
  st.http_addresses = join(resp.http_addresses());
  st.version = resp.software_version();
  st.start_time_micros = resp.start_time_micros();
  st.num_tables = resp.num_tables();
  st.num_live_tablet_servers = resp.num_live_tablet_servers();
  return st;
}

}  // namespace nyala::client
