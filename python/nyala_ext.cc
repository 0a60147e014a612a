// nyala._ext: the Python binding of the C++ client (include/nyala/client.h), with
// pybind11. The Python package nyala (python/nyala/__init__.py) re-exports it and adds
// to_pandas(). Conventions:
//  - Every Status that is not OK becomes a Python exception of the class named after
//    its code (nyala.NotFound, nyala.AlreadyPresent, ...; all subclasses of
//    nyala.Error), with the status text as its message.
//  - The GIL is released around every call that waits for the network or for a
//    client thread (connecting, catalog calls, Apply in the flush modes that may
//    block, Flush, Get, MultiGet, scan batches), so Python threads proceed meanwhile.
//  - Values: BOOL bool; the integer types and UNIXTIME_MICROS (microseconds since the
//    Unix epoch) int; FLOAT and DOUBLE float; STRING str; BINARY bytes; NULL None.
//
// Thread-safety is the C++ client's: Client and Table objects may be shared by
// threads, a Session or a Scan is used by one thread at a time.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <nlohmann/json.hpp>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "nyala/client.h"
#include "tools/table_alter.h"
#include "tools/table_describe.h"
#include "tools/table_spec.h"
#include "tools/value_parse.h"

namespace py = pybind11;

namespace nyala::python {
namespace {

using client::Client;
using client::ClientBuilder;
using client::GetResult;
using client::ReplicaSelection;
using client::ScanBatch;
using client::Scanner;
using client::Session;
using client::Table;
using client::WriteOperation;

// A non-OK Status on its way to Python.
struct StatusError {
  Status status;
};

// The Python exception classes, by Status code; kept for the module's lifetime.
std::map<int, PyObject*>& ExceptionClasses() {
  static auto* classes = new std::map<int, PyObject*>();
  return *classes;
}
PyObject* base_error = nullptr;

PyObject* ExceptionFor(const Status& s) {
  auto it = ExceptionClasses().find(s.code());
  return it != ExceptionClasses().end() ? it->second : base_error;
}

void Check(const Status& s) {
  if (!s.ok()) throw StatusError{s};
}
template <typename T>
T Take(Result<T> r) {
  if (!r.ok()) throw StatusError{std::move(r).status()};
  return std::move(r).value();
}

// A Python exception object for `s`, as raised (for row errors, kept not raised).
py::object ExceptionObject(const Status& s) {
  py::object cls = py::reinterpret_borrow<py::object>(ExceptionFor(s));
  return cls(s.ToString());
}

std::string TypeName(const py::handle& v) { return py::str(v.get_type().attr("__name__")); }

// A Python value as a Cell of `col`'s type, in `arena` (strings are copied there).
Cell ToCell(const ColumnSchema& col, const py::handle& v, Arena* arena) {
  if (v.is_none()) return Cell::Null(col.type());
  auto wrong = [&]() {
    throw StatusError{Status::InvalidArgument("column " + col.name() + " is " +
                                              DataTypeName(col.type()) + ", not a Python " +
                                              TypeName(v))};
  };
  switch (col.type()) {
    case DataType::kBool:
      if (!py::isinstance<py::bool_>(v)) wrong();
      return Cell::Bool(v.cast<bool>());
    case DataType::kInt8:
    case DataType::kInt16:
    case DataType::kInt32:
    case DataType::kInt64:
    case DataType::kUnixtimeMicros: {
      if (!py::isinstance<py::int_>(v) || py::isinstance<py::bool_>(v)) wrong();
      int overflow = 0;
      const long long x = PyLong_AsLongLongAndOverflow(v.ptr(), &overflow);
      const int bytes = GetTypeInfo(col.type()).fixed_size;
      const long long lo = bytes == 8 ? INT64_MIN : -(1LL << (8 * bytes - 1));
      const long long hi = bytes == 8 ? INT64_MAX : (1LL << (8 * bytes - 1)) - 1;
      if (overflow != 0 || x < lo || x > hi) {
        throw StatusError{Status::InvalidArgument("value " + std::string(py::str(v)) +
                                                  " is out of range for " + col.name() + " (" +
                                                  DataTypeName(col.type()) + ")")};
      }
      return Cell::Integer(col.type(), x);
    }
    case DataType::kFloat:
    case DataType::kDouble: {
      if (!py::isinstance<py::float_>(v) && !py::isinstance<py::int_>(v)) wrong();
      if (py::isinstance<py::bool_>(v)) wrong();
      const double d = v.cast<double>();
      return col.type() == DataType::kFloat ? Cell::Float(static_cast<float>(d)) : Cell::Double(d);
    }
    case DataType::kString: {
      if (!py::isinstance<py::str>(v)) wrong();
      Py_ssize_t n = 0;
      const char* p = PyUnicode_AsUTF8AndSize(v.ptr(), &n);
      if (p == nullptr) throw py::error_already_set();
      return Cell::String(arena->Copy(Slice(p, size_t(n))));
    }
    case DataType::kBinary: {
      if (!py::isinstance<py::bytes>(v)) wrong();
      char* p = nullptr;
      Py_ssize_t n = 0;
      PyBytes_AsStringAndSize(v.ptr(), &p, &n);
      return Cell::Binary(arena->Copy(Slice(p, size_t(n))));
    }
    default:
      wrong();
  }
  return Cell();
}

py::object FromCell(const Cell& c) {
  if (!c.has_value()) return py::none();
  switch (c.type()) {
    case DataType::kBool:
      return py::bool_(c.bool_value());
    case DataType::kFloat:
      return py::float_(c.float_value());
    case DataType::kDouble:
      return py::float_(c.double_value());
    case DataType::kString: {
      const Slice s = c.slice_value();
      return py::reinterpret_steal<py::object>(
          PyUnicode_DecodeUTF8(s.cdata(), Py_ssize_t(s.size()), "replace"));
    }
    case DataType::kBinary: {
      const Slice s = c.slice_value();
      return py::bytes(s.cdata(), s.size());
    }
    default:
      return py::int_(c.int_value());
  }
}

// Sets the columns of `row` from a dict {name: value}, a tuple or list in schema
// order (possibly shorter: the first columns), or, for a table with one key column,
// one value (that key).
void FillRow(const Schema& schema, const py::handle& values, Row* row, Arena* arena,
             bool key_only) {
  auto set = [&](int idx, const py::handle& v) {
    const ColumnSchema& col = schema.column(idx);
    const Cell c = ToCell(col, v, arena);
    if (c.is_null()) {
      Check(row->SetNull(idx));
    } else {
      Check(row->Set(idx, c));
    }
  };
  if (py::isinstance<py::dict>(values)) {
    for (auto [k, v] : values.cast<py::dict>()) {
      const std::string name = py::str(k);
      const int idx = schema.FindColumn(name);
      if (idx < 0) throw StatusError{Status::NotFound("no column " + name)};
      if (key_only && !schema.is_key_column(idx)) {
        throw StatusError{Status::InvalidArgument(name + " is not a key column")};
      }
      set(idx, v);
    }
    return;
  }
  if (py::isinstance<py::tuple>(values) || py::isinstance<py::list>(values)) {
    const py::sequence seq = values.cast<py::sequence>();
    const int limit = key_only ? schema.num_key_columns() : schema.num_columns();
    if (int(seq.size()) > limit) {
      throw StatusError{Status::InvalidArgument("a row of " + std::to_string(seq.size()) +
                                                " values for " + std::to_string(limit) +
                                                (key_only ? " key columns" : " columns"))};
    }
    for (size_t i = 0; i < seq.size(); i++) set(int(i), seq[i]);
    return;
  }
  if (schema.num_key_columns() == 1 && key_only) {
    set(0, values);
    return;
  }
  throw StatusError{
      Status::InvalidArgument("a row is a dict, a tuple or a list, not a " + TypeName(values))};
}

py::object RowObject(const ScanBatch::RowPtr& r, const Schema& proj, bool as_dict) {
  const int n = proj.num_columns();
  if (as_dict) {
    py::dict d;
    for (int i = 0; i < n; i++) d[py::str(proj.column(i).name())] = FromCell(r.cell(i));
    return d;
  }
  py::tuple t(n);
  for (int i = 0; i < n; i++) t[size_t(i)] = FromCell(r.cell(i));
  return t;
}

Session::FlushMode ParseFlushMode(const std::string& s) {
  if (s == "auto_flush_sync") return Session::FlushMode::kAutoFlushSync;
  if (s == "auto_flush_background") return Session::FlushMode::kAutoFlushBackground;
  if (s == "manual_flush") return Session::FlushMode::kManualFlush;
  throw StatusError{Status::InvalidArgument(
      "flush mode " + s + ": use auto_flush_sync, auto_flush_background or manual_flush")};
}

ReplicaSelection ParseSelection(const std::string& s) {
  if (s == "leader") return ReplicaSelection::kLeaderOnly;
  if (s == "closest") return ReplicaSelection::kClosestReplica;
  throw StatusError{Status::InvalidArgument("replica selection " + s + ": use leader or closest")};
}

// One applied operation's description, for row errors: (op, row as a tuple of the
// table's columns, None where unset).
py::tuple OpRow(const WriteOperation& op) {
  const Schema& schema = op.table().schema();
  py::tuple t(size_t(schema.num_columns()));
  for (int i = 0; i < schema.num_columns(); i++) {
    t[size_t(i)] = op.row().IsSet(i) ? FromCell(op.row().cell(i)) : py::none();
  }
  return t;
}

class PySession;

// An open table. Shares the C++ Table (immutable, thread-safe).
class PyTable {
 public:
  explicit PyTable(std::shared_ptr<Table> t) : t_(std::move(t)) {}

  const std::string& name() const { return t_->name(); }
  const std::shared_ptr<Table>& table() const { return t_; }

  std::vector<std::string> column_names() const {
    std::vector<std::string> names;
    for (const ColumnSchema& c : t_->schema().columns()) names.push_back(c.name());
    return names;
  }

  py::list schema() const {
    py::list cols;
    const Schema& s = t_->schema();
    for (int i = 0; i < s.num_columns(); i++) {
      const ColumnSchema& c = s.column(i);
      py::dict d;
      d["name"] = c.name();
      d["type"] = DataTypeName(c.type());
      d["key"] = s.is_key_column(i);
      d["nullable"] = c.is_nullable();
      d["default"] =
          c.default_value().has_value() ? FromCell(c.default_value().cell()) : py::none();
      cols.append(d);
    }
    return cols;
  }

  Row KeyRow(const py::handle& key, Arena* arena) const {
    Row row = t_->NewRow();
    FillRow(t_->schema(), key, &row, arena, /*key_only=*/true);
    return row;
  }

  py::object Get(const py::handle& key, std::vector<std::string> columns, bool as_dict,
                 const std::string& replica) const {
    Arena arena;
    Row row = KeyRow(key, &arena);
    const ReplicaSelection sel = ParseSelection(replica);
    Result<GetResult> r = Status::OK();
    {
      py::gil_scoped_release release;
      r = t_->Get(row, columns, sel);
    }
    GetResult got = Take(std::move(r));
    auto found = got.row(0);
    if (!found) return py::none();
    return RowObject(*found, *Projection(columns), as_dict);
  }

  py::list MultiGet(const py::iterable& keys, std::vector<std::string> columns, bool as_dict,
                    const std::string& replica) const {
    Arena arena;
    std::vector<Row> rows;
    for (const py::handle& k : keys) rows.push_back(KeyRow(k, &arena));
    const ReplicaSelection sel = ParseSelection(replica);
    Result<GetResult> r = Status::OK();
    {
      py::gil_scoped_release release;
      r = t_->MultiGet(rows, columns, sel);
    }
    GetResult got = Take(std::move(r));
    const std::shared_ptr<const Schema> proj = Projection(columns);
    py::list out;
    for (size_t i = 0; i < got.num_keys(); i++) {
      auto found = got.row(i);
      out.append(found ? RowObject(*found, *proj, as_dict) : py::none());
    }
    return out;
  }

 private:
  // The columns of the rows a Get returns: the table's, or those named, in that
  // order (as the server projects them). Kept per list of names last asked for.
  std::shared_ptr<const Schema> Projection(const std::vector<std::string>& columns) const {
    if (columns.empty()) return full_;
    if (columns != last_columns_ || !last_projection_) {
      last_projection_ = std::make_shared<const Schema>(Take(t_->schema().Project(columns)));
      last_columns_ = columns;
    }
    return last_projection_;
  }

  std::shared_ptr<Table> t_;
  // Projection()'s cache; under the GIL, which every caller holds.
  std::shared_ptr<const Schema> full_ = std::make_shared<const Schema>(t_->schema());
  mutable std::vector<std::string> last_columns_;
  mutable std::shared_ptr<const Schema> last_projection_;
};

// A scan: an iterator of rows (tuples or dicts) over a C++ Scanner.
class PyScan {
 public:
  PyScan(const PyTable& t, std::vector<std::string> columns, const py::list& predicates,
         int64_t limit, bool as_dict, const std::string& replica, int64_t batch_size_bytes)
      : table_(t.table()), scanner_(std::make_unique<Scanner>(t.table())), as_dict_(as_dict) {
    const Schema& schema = table_->schema();
    if (!columns.empty()) Check(scanner_->SetProjectedColumnNames(columns));
    projection_ = columns.empty() ? schema : Take(schema.Project(columns));
    for (const py::handle& p : predicates) Check(scanner_->AddPredicate(MakePredicate(p)));
    if (limit > 0) Check(scanner_->SetLimit(limit));
    Check(scanner_->SetSelection(ParseSelection(replica)));
    if (batch_size_bytes > 0) Check(scanner_->SetBatchSizeBytes(uint32_t(batch_size_bytes)));
    Status s;
    {
      py::gil_scoped_release release;
      s = scanner_->Open();
    }
    Check(s);
  }

  py::object Next() {
    while (pos_ >= batch_.num_rows()) {
      if (!NextBatch()) throw py::stop_iteration();
    }
    return RowObject(batch_.row(pos_++), projection_, as_dict_);
  }

  // The rows left, column by column: {name: [values]} (for to_pandas).
  py::dict Columns() {
    const int n = projection_.num_columns();
    std::vector<py::list> cols(static_cast<size_t>(n));
    do {
      for (; pos_ < batch_.num_rows(); pos_++) {
        const ScanBatch::RowPtr r = batch_.row(pos_);
        for (int i = 0; i < n; i++) cols[size_t(i)].append(FromCell(r.cell(i)));
      }
    } while (NextBatch());
    py::dict d;
    for (int i = 0; i < n; i++) d[py::str(projection_.column(i).name())] = cols[size_t(i)];
    return d;
  }

  py::list ColumnTypes() const {
    py::list types;
    for (const ColumnSchema& c : projection_.columns()) types.append(DataTypeName(c.type()));
    return types;
  }

  void Close() { scanner_->Close(); }

 private:
  bool NextBatch() {
    if (!scanner_->HasMoreRows()) return false;
    ScanBatch b;
    Status s;
    {
      py::gil_scoped_release release;
      s = scanner_->NextBatch(&b);
    }
    Check(s);
    batch_ = std::move(b);
    pos_ = 0;
    return true;
  }

  // (column, op[, value]): op one of = == < <= > >= in, "is null", "is not null".
  ColumnPredicate MakePredicate(const py::handle& p) {
    if (!py::isinstance<py::tuple>(p) && !py::isinstance<py::list>(p)) {
      throw StatusError{Status::InvalidArgument(
          "a predicate is a tuple (column, op, value) or (column, 'is null'), not a " +
          TypeName(p))};
    }
    const py::sequence seq = p.cast<py::sequence>();
    if (seq.size() < 2 || seq.size() > 3) {
      throw StatusError{Status::InvalidArgument("a predicate has 2 or 3 items")};
    }
    const std::string column = py::str(seq[0]);
    const std::string op = py::str(seq[1]);
    const Schema& schema = table_->schema();
    const int idx = schema.FindColumn(column);
    if (idx < 0) throw StatusError{Status::NotFound("no column " + column)};
    const ColumnSchema& col = schema.column(idx);
    if (op == "is null" || op == "is not null") {
      if (seq.size() != 2) throw StatusError{Status::InvalidArgument(op + " takes no value")};
      return Take(op == "is null" ? table_->NewIsNullPredicate(column)
                                  : table_->NewIsNotNullPredicate(column));
    }
    if (seq.size() != 3) throw StatusError{Status::InvalidArgument(op + " needs a value")};
    if (op == "in") {
      std::vector<Cell> values;
      for (const py::handle& v : seq[2].cast<py::iterable>()) {
        values.push_back(ToCell(col, v, &arena_));
      }
      return Take(table_->NewInListPredicate(column, values));
    }
    static const std::map<std::string, ColumnPredicate::CompareOp> kOps = {
        {"=", ColumnPredicate::CompareOp::kEqual},
        {"==", ColumnPredicate::CompareOp::kEqual},
        {"<", ColumnPredicate::CompareOp::kLess},
        {"<=", ColumnPredicate::CompareOp::kLessEqual},
        {">", ColumnPredicate::CompareOp::kGreater},
        {">=", ColumnPredicate::CompareOp::kGreaterEqual}};
    auto it = kOps.find(op);
    if (it == kOps.end()) {
      throw StatusError{Status::InvalidArgument(
          "predicate operator " + op + ": use = < <= > >= in, 'is null' or 'is not null'")};
    }
    return Take(table_->NewComparisonPredicate(column, it->second, ToCell(col, seq[2], &arena_)));
  }

  std::shared_ptr<Table> table_;
  std::unique_ptr<Scanner> scanner_;
  Schema projection_;
  Arena arena_;  // predicate values
  bool as_dict_;
  ScanBatch batch_;
  int pos_ = 0;
};

// A session for one thread's writes.
class PySession {
 public:
  explicit PySession(std::shared_ptr<Session> s) : s_(std::move(s)) {}

  void Apply(const PyTable& t, RowOpType type, const py::handle& row, int64_t tag) {
    std::unique_ptr<WriteOperation> op;
    switch (type) {
      case RowOpType::kInsert:
        op = t.table()->NewInsert();
        break;
      case RowOpType::kUpsert:
        op = t.table()->NewUpsert();
        break;
      case RowOpType::kUpdate:
        op = t.table()->NewUpdate();
        break;
      default:
        op = t.table()->NewDelete();
        break;
    }
    Arena arena;  // the operation copies strings into its own row
    Row values = t.table()->NewRow();
    FillRow(t.table()->schema(), row, &values, &arena, type == RowOpType::kDelete);
    for (int i = 0; i < values.schema().num_columns(); i++) {
      if (!values.IsSet(i)) continue;
      Check(values.cell(i).is_null() ? op->SetNull(i) : op->Set(i, values.cell(i)));
    }
    op->set_tag(tag);
    Status s;
    {
      py::gil_scoped_release release;
      s = s_->Apply(std::move(op));
    }
    if (!s.ok() && s_->flush_mode() == Session::FlushMode::kAutoFlushSync) {
      // The row's error is raised here: not again by the next flush() or close().
      std::vector<std::unique_ptr<client::WriteError>> dropped;
      bool overflowed = false;
      s_->GetPendingErrors(&dropped, &overflowed);
    }
    Check(s);
  }

  void Flush() {
    Status s;
    {
      py::gil_scoped_release release;
      s = s_->Flush();
    }
    // Row failures are reported through pending_errors(); raise only for the rest.
    if (!s.ok() && !(s.IsIOError() && s_->CountPendingErrors() > 0)) Check(s);
  }

  // [(op, row, error, tag)], moved out of the session.
  py::list PendingErrors() {
    std::vector<std::unique_ptr<client::WriteError>> errors;
    bool overflowed = false;
    s_->GetPendingErrors(&errors, &overflowed);
    py::list out;
    for (const auto& e : errors) {
      out.append(py::make_tuple(RowOpTypeName(e->failed_op().type()), OpRow(e->failed_op()),
                                ExceptionObject(e->status()), e->failed_op().tag()));
    }
    return out;
  }

  void Close() {
    Status s;
    {
      py::gil_scoped_release release;
      s = s_->Close();
    }
    if (!s.ok() && !(s.IsIOError() && s_->CountPendingErrors() > 0)) Check(s);
  }

  py::dict Counts() const {
    const Session::WriteCounts c = s_->GetWriteCounts();
    py::dict d;
    d["succeeded"] = c.succeeded;
    d["failed"] = c.failed;
    d["timed_out"] = c.timed_out;
    return d;
  }

  int CountPendingErrors() const { return s_->CountPendingErrors(); }
  int CountBufferedOperations() const { return s_->CountBufferedOperations(); }

 private:
  std::shared_ptr<Session> s_;
};

class PyClient {
 public:
  PyClient(const std::vector<std::string>& masters, int64_t rpc_timeout_ms,
           int64_t admin_timeout_ms) {
    ClientBuilder b;
    b.master_server_addrs(masters);
    if (rpc_timeout_ms > 0) b.default_rpc_timeout(MonoDelta::FromMilliseconds(rpc_timeout_ms));
    if (admin_timeout_ms > 0) {
      b.default_admin_operation_timeout(MonoDelta::FromMilliseconds(admin_timeout_ms));
    }
    Result<std::shared_ptr<Client>> r = Status::OK();
    {
      py::gil_scoped_release release;
      r = b.Build();
    }
    c_ = Take(std::move(r));
  }

  std::vector<std::string> ListTables(const std::string& filter) {
    py::gil_scoped_release release;
    return Take(c_->ListTables(filter));
  }

  bool TableExists(const std::string& name) {
    py::gil_scoped_release release;
    return Take(c_->TableExists(name));
  }

  // `spec`: the JSON text `nyala table create` takes (tools/table_spec.h).
  void CreateTable(const std::string& spec_json, bool wait) {
    nlohmann::json j = nlohmann::json::parse(spec_json, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) throw StatusError{Status::InvalidArgument("the table spec is not JSON")};
    tools::TableSpec spec = Take(tools::ParseTableSpec(j));
    std::unique_ptr<client::TableCreator> creator = c_->NewTableCreator();
    Check(tools::ApplyTableSpec(spec, creator.get()));
    creator->wait(wait);
    Status s;
    {
      py::gil_scoped_release release;
      s = creator->Create();
    }
    Check(s);
  }

  // The JSON of `nyala table describe --format=json`, as text.
  std::string DescribeTable(const std::string& name) {
    std::string out;
    {
      py::gil_scoped_release release;
      Result<std::shared_ptr<Table>> t = c_->OpenTable(name);
      if (!t.ok()) throw StatusError{t.status()};
      Result<std::vector<client::TabletInfo>> tablets = c_->ListTabletsOfTable(name);
      if (!tablets.ok()) throw StatusError{tablets.status()};
      out = tools::DescribeTableJson(**t, *tablets, tools::TimestampFormat::kIso8601).dump();
    }
    return out;
  }

  // `steps_json`: the JSON `nyala table alter` takes (tools/table_alter.h).
  void AlterTable(const std::string& name, const std::string& steps_json, bool wait) {
    nlohmann::json j = nlohmann::json::parse(steps_json, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) throw StatusError{Status::InvalidArgument("the alteration is not JSON")};
    Status s;
    {
      py::gil_scoped_release release;
      Result<std::shared_ptr<Table>> t = c_->OpenTable(name);
      if (!t.ok()) throw StatusError{t.status()};
      std::unique_ptr<client::TableAlterer> a = c_->NewTableAlterer(name);
      std::string new_name;
      s = tools::AddAlterSteps(**t, j, a.get(), &new_name);
      if (s.ok()) s = a->wait(wait).Alter();
    }
    Check(s);
  }

  bool IsAlterTableInProgress(const std::string& name) {
    py::gil_scoped_release release;
    return Take(c_->IsAlterTableInProgress(name));
  }

  void DeleteTable(const std::string& name) {
    py::gil_scoped_release release;
    Check(c_->DeleteTable(name));
  }

  PyTable OpenTable(const std::string& name) {
    py::gil_scoped_release release;
    return PyTable(Take(c_->OpenTable(name)));
  }

  py::list ListTabletServers() {
    std::vector<client::TabletServerInfo> servers;
    {
      py::gil_scoped_release release;
      servers = Take(c_->ListTabletServers());
    }
    py::list out;
    for (const auto& s : servers) {
      py::dict d;
      d["uuid"] = s.uuid;
      d["rpc_address"] = s.rpc_address;
      d["live"] = s.live;
      d["millis_since_heartbeat"] = s.millis_since_heartbeat;
      d["num_live_tablets"] = s.num_live_tablets;
      out.append(d);
    }
    return out;
  }

  PySession NewSession(const std::string& flush_mode, int64_t timeout_ms, int64_t buffer_bytes,
                       int64_t flush_interval_ms) {
    std::shared_ptr<Session> s = c_->NewSession();
    Check(s->SetFlushMode(ParseFlushMode(flush_mode)));
    if (timeout_ms > 0) Check(s->SetTimeout(MonoDelta::FromMilliseconds(timeout_ms)));
    if (buffer_bytes > 0) Check(s->SetMutationBufferSpace(size_t(buffer_bytes)));
    if (flush_interval_ms > 0) {
      Check(s->SetFlushInterval(MonoDelta::FromMilliseconds(flush_interval_ms)));
    }
    return PySession(std::move(s));
  }

 private:
  std::shared_ptr<Client> c_;
};

}  // namespace

PYBIND11_MODULE(_ext, m) {
  m.doc() = "The Nyala C++ client, for Python (use the package nyala)";

  base_error = PyErr_NewException("nyala.Error", PyExc_Exception, nullptr);
  m.attr("Error") = py::handle(base_error);
  const std::pair<Status::Code, const char*> kClasses[] = {
      {Status::kNotFound, "NotFound"},
      {Status::kCorruption, "Corruption"},
      {Status::kNotSupported, "NotSupported"},
      {Status::kInvalidArgument, "InvalidArgument"},
      {Status::kIOError, "IOError"},
      {Status::kAlreadyPresent, "AlreadyPresent"},
      {Status::kNetworkError, "NetworkError"},
      {Status::kIllegalState, "IllegalState"},
      {Status::kTimedOut, "TimedOut"},
      {Status::kAborted, "Aborted"},
      {Status::kServiceUnavailable, "ServiceUnavailable"},
      {Status::kIncomplete, "Incomplete"},
  };
  for (const auto& [code, name] : kClasses) {
    PyObject* cls = PyErr_NewException((std::string("nyala.") + name).c_str(), base_error, nullptr);
    ExceptionClasses()[code] = cls;
    m.attr(name) = py::handle(cls);
  }
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const StatusError& e) {
      PyErr_SetString(ExceptionFor(e.status), e.status.ToString().c_str());
    }
  });

  py::class_<PyTable>(m, "Table", "An open table; shared by threads.")
      .def_property_readonly("name", &PyTable::name)
      .def_property_readonly("column_names", &PyTable::column_names)
      .def_property_readonly("schema", &PyTable::schema,
                             "[{name, type, key, nullable, default}] in column order")
      .def("get", &PyTable::Get, py::arg("key"), py::arg("columns") = std::vector<std::string>(),
           py::arg("as_dict") = false, py::arg("replica") = "leader",
           "The row of one primary key (a dict, a tuple of the key columns, or the value of "
           "a one-column key), or None")
      .def("multi_get", &PyTable::MultiGet, py::arg("keys"),
           py::arg("columns") = std::vector<std::string>(), py::arg("as_dict") = false,
           py::arg("replica") = "leader",
           "The rows of many keys, one Get per tablet in parallel; None for a missing key");

  py::class_<PyScan>(m, "Scan", "An iterator of rows; one thread at a time.")
      .def("__iter__", [](PyScan& s) -> PyScan& { return s; })
      .def("__next__", &PyScan::Next)
      .def("columns", &PyScan::Columns, "The rows left, as {column: [values]}")
      .def("column_types", &PyScan::ColumnTypes)
      .def("close", &PyScan::Close);

  m.def(
      "_scan",
      [](const PyTable& t, std::vector<std::string> columns, py::list predicates, int64_t limit,
         bool as_dict, const std::string& replica, int64_t batch_size_bytes) {
        return std::make_unique<PyScan>(t, std::move(columns), predicates, limit, as_dict, replica,
                                        batch_size_bytes);
      },
      py::arg("table"), py::arg("columns"), py::arg("predicates"), py::arg("limit"),
      py::arg("as_dict"), py::arg("replica"), py::arg("batch_size_bytes"));

  // insert, upsert, update and delete: one binding each over PySession::Apply.
  auto apply = [](RowOpType type) {
    return [type](PySession& s, const PyTable& t, py::handle row, int64_t tag) {
      s.Apply(t, type, row, tag);
    };
  };
  py::class_<PySession>(m, "Session", "Writes of one thread; see docs/client.md.")
      .def("insert", apply(RowOpType::kInsert), py::arg("table"), py::arg("row"),
           py::arg("tag") = 0)
      .def("upsert", apply(RowOpType::kUpsert), py::arg("table"), py::arg("row"),
           py::arg("tag") = 0)
      .def("update", apply(RowOpType::kUpdate), py::arg("table"), py::arg("row"),
           py::arg("tag") = 0)
      .def("delete", apply(RowOpType::kDelete), py::arg("table"), py::arg("key"),
           py::arg("tag") = 0)
      .def("_flush", &PySession::Flush)
      .def("_close", &PySession::Close)
      .def("pending_errors", &PySession::PendingErrors,
           "Moves the row errors out: [(op, row, error, tag)]")
      .def("count_pending_errors", &PySession::CountPendingErrors)
      .def("count_buffered_operations", &PySession::CountBufferedOperations)
      .def("counts", &PySession::Counts, "{succeeded, failed, timed_out}");

  py::class_<PyClient>(m, "Client", "A connection to a cluster; shared by threads.")
      .def(py::init<const std::vector<std::string>&, int64_t, int64_t>(), py::arg("masters"),
           py::arg("rpc_timeout_ms") = 0, py::arg("admin_timeout_ms") = 0)
      .def("list_tables", &PyClient::ListTables, py::arg("filter") = "")
      .def("table_exists", &PyClient::TableExists, py::arg("name"))
      .def("_create_table", &PyClient::CreateTable, py::arg("spec_json"), py::arg("wait") = true)
      .def("_describe_table", &PyClient::DescribeTable, py::arg("name"))
      .def("_alter_table", &PyClient::AlterTable, py::arg("name"), py::arg("steps_json"),
           py::arg("wait") = true)
      .def("is_alter_table_in_progress", &PyClient::IsAlterTableInProgress, py::arg("name"),
           "Whether an alteration of the table is still being carried to its tablets.")
      .def("delete_table", &PyClient::DeleteTable, py::arg("name"))
      .def("table", &PyClient::OpenTable, py::arg("name"))
      .def("list_tablet_servers", &PyClient::ListTabletServers)
      .def("_new_session", &PyClient::NewSession, py::arg("flush_mode"), py::arg("timeout_ms"),
           py::arg("buffer_bytes"), py::arg("flush_interval_ms"));
}

}  // namespace nyala::python
