#!/usr/bin/env python3
"""A small application of the Nyala Python client, run against a running cluster:

    PYTHONPATH=<prefix>/lib/python3/dist-packages example.py <master>[,<master>...] [table]

It creates a table, writes rows in the background and checks every row's outcome,
reads one row by its key and several at once, scans with a predicate (into pandas
when it is installed), and deletes the table. Prints what it does; exits 1 with the
error on any failure.
"""

import sys

import nyala

ROWS = 1000


def run(masters, name):
    # Several masters may be given, comma-separated: the client finds the leader.
    client = nyala.connect(masters.split(","))
    client.create_table({
        "name": name,
        "columns": [
            {"name": "id", "type": "INT64", "key": True},
            {"name": "name", "type": "STRING"},
            {"name": "score", "type": "INT32", "nullable": True},
        ],
        "hash_partitions": [{"columns": ["id"], "buckets": 4}],
        "num_replicas": 1,
    })
    print(f"created table {name}")
    table = client.table(name)

    # Writes go out in the background; row errors come back from flush(), tagged.
    session = client.new_session("auto_flush_background")
    for i in range(ROWS):
        session.insert(table, {"id": i, "name": f"row-{i}", "score": i % 100}, tag=i)
    session.insert(table, {"id": 7, "name": "duplicate"}, tag=-1)
    try:
        session.flush()
        raise RuntimeError("the duplicate row was not reported")
    except nyala.RowErrors as e:
        for err in e.errors:
            if err.tag != -1 or not isinstance(err.error, nyala.AlreadyPresent):
                raise RuntimeError(f"unexpected row error: {err}") from None
            print(f"row error, as expected: {err.op} {err.row}: {err.error}")
    counts = session.counts()
    print(f"wrote {counts['succeeded']} rows, {counts['failed']} failed")
    if counts["succeeded"] != ROWS or counts["failed"] != 1:
        raise RuntimeError(f"expected {ROWS} rows written and the duplicate failed")
    session.close()

    print(f"get id=42: {table.get(42)}")
    if table.get(42) != (42, "row-42", 42):
        raise RuntimeError("row 42 is wrong")
    print(f"multi_get 1, 2, 5000: {table.multi_get([1, 2, 5000], columns=['name'])}")

    scan = table.scan(columns=["id", "score"], predicates=[("score", ">=", 95)])
    try:
        import pandas  # noqa: F401
        frame = scan.to_pandas()
        rows = len(frame)
        if (frame["score"] < 95).any():
            raise RuntimeError("the predicate let a row through")
    except ImportError:
        rows = sum(1 for _ in scan)
    print(f"scan score >= 95: {rows} rows")
    if rows != ROWS // 20:
        raise RuntimeError(f"expected {ROWS // 20}")

    client.delete_table(name)
    print(f"deleted table {name}")


def main():
    if len(sys.argv) not in (2, 3):
        print(f"usage: {sys.argv[0]} <master>[,<master>...] [table name]", file=sys.stderr)
        return 2
    try:
        run(sys.argv[1], sys.argv[2] if len(sys.argv) == 3 else "nyala_python_example")
    except (nyala.Error, RuntimeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
