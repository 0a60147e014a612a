"""The Python client against a real local cluster: every call, and its errors.

Run by ctest (python-client-itest) with PYTHONPATH holding the built package and
NYALA_BIN_DIR the daemons: python3 -m unittest discover -s python/tests -v
"""

import os
import signal
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import nyala  # noqa: E402
from cluster import LocalCluster  # noqa: E402

BIN_DIR = os.environ.get("NYALA_BIN_DIR", os.path.join(os.path.dirname(__file__), "../../build/bin"))

PEOPLE = {
    "name": "people",
    "columns": [
        {"name": "id", "type": "INT64", "key": True},
        {"name": "name", "type": "STRING"},
        {"name": "age", "type": "INT32", "nullable": True},
    ],
    "hash_partitions": [{"columns": ["id"], "buckets": 3}],
    "num_replicas": 1,
}

ALL_TYPES = {
    "name": "all_types",
    "columns": [
        {"name": "k", "type": "INT64", "key": True},
        {"name": "b", "type": "BOOL", "nullable": True},
        {"name": "i8", "type": "INT8", "nullable": True},
        {"name": "i16", "type": "INT16", "nullable": True},
        {"name": "i32", "type": "INT32", "nullable": True},
        {"name": "f", "type": "FLOAT", "nullable": True},
        {"name": "d", "type": "DOUBLE", "nullable": True},
        {"name": "s", "type": "STRING", "nullable": True},
        {"name": "bin", "type": "BINARY", "nullable": True},
        {"name": "ts", "type": "UNIXTIME_MICROS", "nullable": True},
    ],
    "num_replicas": 1,
}


def wait_for(cond, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.05)
    return False


class ClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cluster = LocalCluster(BIN_DIR, num_tservers=1)
        cls.client = nyala.connect(cls.cluster.master)
        assert wait_for(lambda: any(s["live"] for s in cls.client.list_tablet_servers()))
        cls.client.create_table(PEOPLE)
        cls.people = cls.client.table("people")
        with cls.client.new_session("auto_flush_background") as s:
            for i in range(100):
                s.insert(cls.people, (i, f"person {i}", None if i % 10 == 0 else i % 50))

    @classmethod
    def tearDownClass(cls):
        cls.cluster.stop()

    # Connecting and the catalog.

    def test_connect(self):
        servers = self.client.list_tablet_servers()
        self.assertEqual(len(servers), 1)
        self.assertTrue(servers[0]["live"])
        self.assertEqual(servers[0]["rpc_address"], self.cluster.tservers[0])
        other = nyala.connect([self.cluster.master], rpc_timeout_ms=5000, admin_timeout_ms=5000)
        self.assertIn("people", other.list_tables())
        with self.assertRaises(nyala.InvalidArgument):
            nyala.connect([])

    def test_create_describe_list_delete(self):
        spec = dict(PEOPLE, name="catalog_test")
        self.client.create_table(spec)
        self.assertIn("catalog_test", self.client.list_tables())
        self.assertEqual(self.client.list_tables("catalog_"), ["catalog_test"])
        self.assertTrue(self.client.table_exists("catalog_test"))
        d = self.client.describe_table("catalog_test")
        self.assertEqual(d["name"], "catalog_test")
        self.assertEqual([c["name"] for c in d["columns"]], ["id", "name", "age"])
        self.assertEqual([c["key"] for c in d["columns"]], [True, False, False])
        self.assertEqual(d["hash_partitions"], [{"columns": ["id"], "buckets": 3, "seed": 0}])
        # The description is a spec: it creates a table like this one.
        self.client.create_table(dict(d, name="catalog_copy"))
        self.assertEqual(dict(self.client.describe_table("catalog_copy"), name="catalog_test"), d)
        self.client.delete_table("catalog_copy")
        with self.assertRaises(nyala.AlreadyPresent):
            self.client.create_table(spec)
        self.client.delete_table("catalog_test")
        self.assertFalse(self.client.table_exists("catalog_test"))
        self.assertNotIn("catalog_test", self.client.list_tables())

    def test_alter_table(self):
        self.client.create_table(dict(PEOPLE, name="alter_test"))
        people = self.client.table("alter_test")
        with self.client.new_session() as s:
            s.insert(people, {"id": 1, "name": "ada", "age": 36})
        self.client.alter_table("alter_test", [
            {"add_column": {"name": "email", "type": "STRING", "nullable": True,
                            "default": "none"}},
            {"rename_column": {"name": "age", "new_name": "years"}},
            {"set_comment": "people, altered"}])
        self.assertFalse(self.client.is_alter_table_in_progress("alter_test"))
        d = self.client.describe_table("alter_test")
        self.assertEqual([c["name"] for c in d["columns"]], ["id", "name", "years", "email"])
        self.assertEqual(d["comment"], "people, altered")
        fresh = self.client.table("alter_test")
        self.assertEqual(list(fresh.scan(as_dict=True)),
                         [{"id": 1, "name": "ada", "years": 36, "email": "none"}])
        # Refused as a whole, saying why.
        with self.assertRaises(nyala.InvalidArgument) as e:
            self.client.alter_table("alter_test", [{"drop_column": "email"},
                                                   {"drop_column": "id"}])
        self.assertIn("primary key cannot change", str(e.exception))
        self.assertIn("email", [c["name"] for c in
                                self.client.describe_table("alter_test")["columns"]])
        self.client.delete_table("alter_test")

    def test_catalog_errors(self):
        with self.assertRaises(nyala.NotFound):
            self.client.table("no_such_table")
        with self.assertRaises(nyala.NotFound):
            self.client.describe_table("no_such_table")
        with self.assertRaises(nyala.NotFound):
            self.client.delete_table("no_such_table")
        with self.assertRaises(nyala.InvalidArgument) as e:
            self.client.create_table({"name": "bad", "columns": [{"name": "k", "type": "NOPE"}]})
        self.assertIn("NOPE", str(e.exception))
        with self.assertRaises(nyala.InvalidArgument):
            self.client.create_table("{not json")
        self.assertTrue(issubclass(nyala.NotFound, nyala.Error))

    def test_table_schema(self):
        self.assertEqual(self.people.name, "people")
        self.assertEqual(self.people.column_names, ["id", "name", "age"])
        self.assertEqual(self.people.schema[2],
                         {"name": "age", "type": "INT32", "key": False, "nullable": True,
                          "default": None})

    # Writing.

    def test_sync_writes_raise_their_row_error(self):
        s = self.client.new_session()  # auto_flush_sync
        s.insert(self.people, {"id": 1000, "name": "a"})
        with self.assertRaises(nyala.AlreadyPresent):
            s.insert(self.people, {"id": 1000, "name": "b"})
        s.upsert(self.people, {"id": 1000, "name": "c", "age": 3})
        self.assertEqual(self.people.get(1000), (1000, "c", 3))
        s.update(self.people, {"id": 1000, "age": 4})
        self.assertEqual(self.people.get(1000), (1000, "c", 4))
        with self.assertRaises(nyala.NotFound):
            s.update(self.people, {"id": 999999, "age": 1})
        s.delete(self.people, 1000)
        self.assertIsNone(self.people.get(1000))
        self.assertEqual(s.pending_errors(), [])  # raised already, not kept
        s.close()
        self.assertEqual(s.counts(), {"succeeded": 4, "failed": 2, "timed_out": 0})

    def test_background_writes_report_row_errors_by_tag(self):
        with self.assertRaises(nyala.RowErrors) as e:
            with self.client.new_session("auto_flush_background") as s:
                for i in range(2000, 2500):
                    s.insert(self.people, {"id": i, "name": "bg"}, tag=i)
                s.insert(self.people, {"id": 2007, "name": "dup"}, tag=-7)
        errors = e.exception.errors
        self.assertEqual(len(errors), 1)
        self.assertEqual(errors[0].op, "INSERT")
        self.assertEqual(errors[0].tag, -7)
        self.assertEqual(errors[0].row, (2007, "dup", None))
        self.assertIsInstance(errors[0].error, nyala.AlreadyPresent)
        self.assertEqual(s.counts(), {"succeeded": 500, "failed": 1, "timed_out": 0})
        self.assertEqual(len(list(self.people.scan(predicates=[("name", "=", "bg")]))), 500)

    def test_manual_flush(self):
        s = self.client.new_session("manual_flush", buffer_bytes=1 << 20)
        for i in range(3000, 3010):
            s.insert(self.people, [i, "manual"])
        self.assertEqual(s.count_buffered_operations(), 10)
        self.assertIsNone(self.people.get(3000))
        s.flush()
        self.assertEqual(s.count_buffered_operations(), 0)
        self.assertEqual(self.people.get(3009), (3009, "manual", None))
        s.update(self.people, {"id": 424242, "name": "missing"}, tag=5)
        with self.assertRaises(nyala.RowErrors) as e:
            s.flush()
        self.assertIsInstance(e.exception.errors[0].error, nyala.NotFound)
        self.assertEqual(e.exception.errors[0].tag, 5)
        s.close()
        with self.assertRaises(nyala.IllegalState):
            s.insert(self.people, [3999, "after close"])

    def test_wrong_values_are_refused_before_sending(self):
        s = self.client.new_session()
        with self.assertRaises(nyala.InvalidArgument):
            s.insert(self.people, {"id": "not a number", "name": "x"})
        with self.assertRaises(nyala.InvalidArgument):
            s.insert(self.people, {"id": 1, "name": 5})
        with self.assertRaises(nyala.InvalidArgument):
            s.insert(self.people, {"id": 1, "name": "x", "age": 2**40})  # INT32
        with self.assertRaises(nyala.NotFound):
            s.insert(self.people, {"id": 1, "nope": 1})
        with self.assertRaises(nyala.InvalidArgument):
            s.insert(self.people, {"id": 1, "name": None})  # NOT NULL
        with self.assertRaises(nyala.InvalidArgument):
            s.insert(self.people, (1, "x", 3, "too many"))
        with self.assertRaises(nyala.InvalidArgument):
            s.insert(self.people, {"id": 50000})  # name missing
        with self.assertRaises(nyala.InvalidArgument):
            self.client.new_session("sometimes")
        self.assertEqual(s.counts()["succeeded"], 0)

    # Reading.

    def test_get_and_multi_get(self):
        self.assertEqual(self.people.get(7), (7, "person 7", 7))
        self.assertEqual(self.people.get((7,)), (7, "person 7", 7))
        self.assertEqual(self.people.get({"id": 10}, as_dict=True),
                         {"id": 10, "name": "person 10", "age": None})
        self.assertEqual(self.people.get(7, columns=["age", "id"]), (7, 7))
        self.assertEqual(self.people.get(7, replica="closest"), (7, "person 7", 7))
        self.assertIsNone(self.people.get(123456))
        self.assertEqual(self.people.multi_get([3, 123456, 1], columns=["name"]),
                         [("person 3",), None, ("person 1",)])
        with self.assertRaises(nyala.InvalidArgument):
            self.people.get("seven")
        with self.assertRaises(nyala.NotFound):
            self.people.get(7, columns=["nope"])
        with self.assertRaises(nyala.InvalidArgument):
            self.people.get({"name": "x"})  # not a key column

    def test_scan(self):
        rows = list(self.people.scan(predicates=[("id", "<", 100)]))
        self.assertEqual(sorted(r[0] for r in rows), list(range(100)))
        self.assertEqual(sorted(self.people.scan(columns=["id"],
                                                 predicates=[("id", ">=", 95), ("id", "<", 100)])),
                         [(95,), (96,), (97,), (98,), (99,)])
        self.assertEqual(list(self.people.scan(columns=["name"], predicates=[("id", "=", 42)])),
                         [("person 42",)])
        self.assertEqual(
            sorted(r["id"] for r in self.people.scan(
                as_dict=True, predicates=[("id", "in", [1, 2, 3, 77777])])), [1, 2, 3])
        nulls = list(self.people.scan(columns=["id"],
                                      predicates=[("age", "is null"), ("id", "<", 100)]))
        self.assertEqual(sorted(r[0] for r in nulls), list(range(0, 100, 10)))
        self.assertEqual(len(list(self.people.scan(limit=7))), 7)
        with self.assertRaises(nyala.InvalidArgument):
            self.people.scan(predicates=[("id", "~", 1)])
        with self.assertRaises(nyala.NotFound):
            self.people.scan(predicates=[("nope", "=", 1)])
        with self.assertRaises(nyala.InvalidArgument):
            self.people.scan(predicates=[("id", "=", "x")])

    def test_to_pandas(self):
        try:
            import pandas  # noqa: F401
        except ImportError:
            self.skipTest("pandas is not installed")
        frame = self.people.scan(columns=["id", "age"],
                                 predicates=[("id", "<", 100)]).to_pandas()
        self.assertEqual(list(frame.columns), ["id", "age"])
        self.assertEqual(len(frame), 100)
        self.assertEqual(str(frame["id"].dtype), "Int64")
        self.assertEqual(int(frame["age"].isna().sum()), 10)
        self.assertEqual(int(frame.sort_values("id")["age"].iloc[7]), 7)
        empty = self.people.scan(predicates=[("id", "<", -1)]).to_pandas()
        self.assertEqual(len(empty), 0)

    def test_every_type_round_trips(self):
        self.client.create_table(ALL_TYPES)
        t = self.client.table("all_types")
        row = (1, True, -128, 32767, -2**31, 1.5, -2.25, "h\u00e9llo", b"\x00\xff", 1700000000123456)
        s = self.client.new_session()
        s.insert(t, row)
        s.insert(t, (2,) + (None,) * 9)
        self.assertEqual(t.get(1), row)
        self.assertEqual(t.get(2), (2,) + (None,) * 9)
        with self.assertRaises(nyala.InvalidArgument):
            s.insert(t, {"k": 3, "i8": 128})
        with self.assertRaises(nyala.InvalidArgument):
            s.insert(t, {"k": 3, "b": 1})  # an int is not a BOOL
        with self.assertRaises(nyala.InvalidArgument):
            s.insert(t, {"k": 3, "bin": "text"})  # a str is not BINARY
        try:
            import pandas  # noqa: F401
        except ImportError:
            return
        frame = t.scan().to_pandas().sort_values("k")
        self.assertEqual(str(frame["ts"].dtype), "datetime64[ns, UTC]")
        self.assertEqual(frame["ts"].iloc[0].value // 1000, 1700000000123456)
        self.assertEqual(frame["s"].iloc[0], "h\u00e9llo")
        self.assertTrue(frame["b"].iloc[0])


class ServerGoneTest(unittest.TestCase):
    """A tablet server that stops answering, then dies."""

    @classmethod
    def setUpClass(cls):
        cls.cluster = LocalCluster(BIN_DIR, num_tservers=1)
        cls.client = nyala.connect(cls.cluster.master, rpc_timeout_ms=2000)
        assert wait_for(lambda: any(s["live"] for s in cls.client.list_tablet_servers()))
        cls.client.create_table(dict(PEOPLE, name="gone"))
        cls.table = cls.client.table("gone")
        s = cls.client.new_session()
        s.insert(cls.table, (1, "one"))

    @classmethod
    def tearDownClass(cls):
        for proc in cls.cluster.procs.values():
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGCONT)
        cls.cluster.stop()

    def test_gil_is_released_while_waiting_then_server_dies(self):
        self.assertEqual(self.table.get(1), (1, "one", None))
        ts = self.cluster.procs["ts0"]
        os.kill(ts.pid, signal.SIGSTOP)
        inside = threading.Event()
        outcome = []

        def blocked_get():
            inside.set()
            try:
                self.table.get(1)
                outcome.append(None)
            except nyala.Error as e:
                outcome.append(e)

        t = threading.Thread(target=blocked_get)
        t.start()
        inside.wait()
        spins = 0
        while t.is_alive():  # runs only if the waiting thread let go of the GIL
            spins += 1
        t.join()
        os.kill(ts.pid, signal.SIGCONT)
        self.assertIsInstance(outcome[0], nyala.TimedOut)
        self.assertGreater(spins, 10000)

        # Now it dies: reads and writes fail with a specific error, within their timeout.
        self.cluster.kill("ts0")
        with self.assertRaises((nyala.NetworkError, nyala.TimedOut, nyala.ServiceUnavailable)):
            self.table.get(1)
        s = self.client.new_session("auto_flush_background", timeout_ms=2000)
        s.insert(self.table, (2, "two"), tag=2)
        with self.assertRaises(nyala.RowErrors) as e:
            s.flush()
        self.assertEqual(e.exception.errors[0].tag, 2)
        self.assertIsInstance(e.exception.errors[0].error,
                              (nyala.TimedOut, nyala.NetworkError, nyala.ServiceUnavailable))


if __name__ == "__main__":
    unittest.main()
