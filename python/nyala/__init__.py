"""Nyala's Python client: the C++ client (libnyala_client) through pybind11.

    import nyala
    client = nyala.connect("127.0.0.1:7051")
    client.create_table({"name": "people",
                         "columns": [{"name": "id", "type": "INT64", "key": True},
                                     {"name": "name", "type": "STRING", "nullable": True}],
                         "hash_partitions": [{"columns": ["id"], "buckets": 4}]})
    people = client.table("people")
    with client.new_session("auto_flush_background") as session:
        for i in range(1000):
            session.insert(people, {"id": i, "name": f"person {i}"})
    people.get(42)                                  # (42, 'person 42')
    rows = list(people.scan(columns=["id"], predicates=[("id", "<", 10)]))
    frame = people.scan().to_pandas()               # with pandas installed

Rows are tuples in the table's (or the projection's) column order, or dicts with
as_dict=True. Values: BOOL bool; integers and UNIXTIME_MICROS (microseconds since the
Unix epoch) int; FLOAT and DOUBLE float; STRING str; BINARY bytes; NULL None.

Errors raise subclasses of nyala.Error named after their status: NotFound,
AlreadyPresent, InvalidArgument, TimedOut, NetworkError, IllegalState,
ServiceUnavailable, NotSupported, ... A write's row errors are collected by its
session: flush() and close() raise nyala.RowErrors holding them (each a RowError of
op, row, error and tag); in auto_flush_sync mode the write call itself raises its
row's error.

The GIL is released while a call waits for the cluster, so threads scale. A Client and
its Tables are shared by threads; use one Session per thread. docs/client.md describes
the C++ client's contract, which this module inherits.
"""

import collections
import json

from nyala._ext import (  # noqa: F401  (re-exported)
    Aborted,
    AlreadyPresent,
    Client,
    Corruption,
    Error,
    IllegalState,
    Incomplete,
    InvalidArgument,
    IOError,
    NetworkError,
    NotFound,
    NotSupported,
    Scan,
    ServiceUnavailable,
    Session,
    Table,
    TimedOut,
)
from nyala import _ext

__all__ = [
    "connect", "Client", "Table", "Session", "Scan", "RowError", "RowErrors", "Error",
    "Aborted", "AlreadyPresent", "Corruption", "IllegalState", "Incomplete",
    "InvalidArgument", "IOError", "NetworkError", "NotFound", "NotSupported",
    "ServiceUnavailable", "TimedOut",
]

RowError = collections.namedtuple("RowError", ["op", "row", "error", "tag"])
RowError.__doc__ = """A failed write: op ("INSERT", ...), the row as applied (a tuple of the
table's columns, None where unset), the error (a nyala.Error) and the caller's tag."""


class RowErrors(Error):
    """Some writes of a flush failed; .errors lists them (RowError each)."""

    def __init__(self, errors):
        self.errors = errors
        first = errors[0].error if errors else None
        super().__init__(f"{len(errors)} row(s) failed" + (f", first: {first}" if first else ""))


def connect(masters, rpc_timeout_ms=0, admin_timeout_ms=0):
    """A Client of the cluster whose masters are `masters`: "host:port", a
    comma-separated list of them, or a list. Timeouts default to 10 s for data calls
    and 30 s for catalog calls."""
    if isinstance(masters, str):
        masters = [masters]
    return Client(list(masters), rpc_timeout_ms, admin_timeout_ms)


def _create_table(self, spec, wait=True):
    """Creates a table from the JSON spec `nyala table create` takes (a dict or JSON
    text). With wait, returns once every tablet runs."""
    if not isinstance(spec, str):
        spec = json.dumps(spec)
    self._create_table(spec, wait)


def _describe_table(self, name):
    """The table as `nyala table describe --format=json` prints it, as a dict."""
    return json.loads(self._describe_table(name))


def _alter_table(self, name, steps, wait=True):
    """Alters table `name` with the steps `nyala table alter` takes (a list of dicts,
    each with one key, the step: {"add_column": {"name": "n", "type": "INT64",
    "nullable": True}}, {"drop_column": "n"}, {"rename_column": {"name": "a",
    "new_name": "b"}}, {"rename_table": "t2"}, {"column_set_default": {"name": "n",
    "default": 5}}, {"column_remove_default": "n"}, {"column_set_comment": {"name": "n",
    "comment": "..."}}, {"set_comment": "..."}, {"add_range_partition": {"lower": [1],
    "upper": [2]}}, {"drop_range_partition": {...}}), all or none. With wait, returns
    once every tablet has the change."""
    if not isinstance(steps, str):
        steps = json.dumps(steps)
    self._alter_table(name, steps, wait)


def _new_session(self, flush_mode="auto_flush_sync", timeout_ms=0, buffer_bytes=0,
                 flush_interval_ms=0):
    """A Session: flush_mode auto_flush_sync (each write sent and waited for),
    auto_flush_background (buffered, sent in the background) or manual_flush (sent by
    flush()); timeout_ms per flushed batch; buffer_bytes of the write buffer (7 MiB);
    flush_interval_ms of the background mode (1000)."""
    return self._new_session(flush_mode, timeout_ms, buffer_bytes, flush_interval_ms)


Client.create_table = _create_table
Client.describe_table = _describe_table
Client.alter_table = _alter_table
Client.new_session = _new_session


def _raise_row_errors(session):
    if session.count_pending_errors() > 0:
        raise RowErrors([RowError(*e) for e in session.pending_errors()])


def _flush(self):
    """Sends what is buffered and waits; raises RowErrors when rows failed."""
    self._flush()
    _raise_row_errors(self)


def _close(self):
    """Flushes, waits and refuses further writes; raises RowErrors when rows failed."""
    self._close()
    _raise_row_errors(self)


def _enter(self):
    return self


def _exit(self, exc_type, exc, tb):
    if exc_type is None:
        self.close()
    else:
        self._close()  # the exception in flight wins over row errors
    return False


Session.flush = _flush
Session.close = _close
Session.__enter__ = _enter
Session.__exit__ = _exit


def _scan(self, columns=None, predicates=None, limit=0, as_dict=False, replica="leader",
          batch_size_bytes=0):
    """An iterator of the table's rows: columns to return (all by default),
    predicates ANDed together, each (column, op, value) with op one of = < <= > >=
    in (value a list), or (column, "is null") / (column, "is not null"); limit on the
    rows (0: all); replica "leader" (linearizable) or "closest"."""
    return _ext._scan(self, list(columns or []), list(predicates or []), limit, as_dict, replica,
                      batch_size_bytes)


Table.scan = _scan

_PANDAS_DTYPES = {
    "BOOL": "boolean", "INT8": "Int8", "INT16": "Int16", "INT32": "Int32", "INT64": "Int64",
    "FLOAT": "float32", "DOUBLE": "float64", "STRING": "string", "BINARY": "object",
}


def _to_pandas(self):
    """The rows left as a pandas DataFrame, one column per projected column (nullable
    pandas dtypes; UNIXTIME_MICROS as datetime64[us] in UTC). Needs pandas."""
    try:
        import pandas
    except ImportError as e:  # pragma: no cover - depends on the machine
        raise ImportError("to_pandas() needs pandas (Debian: python3-pandas)") from e
    columns = self.columns()
    frame = pandas.DataFrame(columns)
    for name, type_name in zip(columns.keys(), self.column_types()):
        if type_name == "UNIXTIME_MICROS":
            frame[name] = pandas.to_datetime(frame[name], unit="us", utc=True)
        else:
            frame[name] = frame[name].astype(_PANDAS_DTYPES[type_name])
    return frame


Scan.to_pandas = _to_pandas
