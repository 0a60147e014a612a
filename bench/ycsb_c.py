#!/usr/bin/env python3
"""A YCSB-C-style read loop in Python through the nyala package: THREADS threads read
records of the table bench/ycsb.cc loads (keys "user" + FNV-1a hash of the record
number, uniform over RECORDCOUNT records) for SECONDS seconds, each read either one
Table.get or, with --batch N, one Table.multi_get of N keys. Prints

    python reads/s: R (T threads, batch N, M misses)

bench/python-vs-cpp-reads.sh runs it beside the C++ ycsb; see bench/README.md.

Usage: ycsb_c.py --master H:P [--table usertable] [--records N] [--threads 8]
                 [--seconds 20] [--batch 1]
"""

import argparse
import random
import sys
import threading
import time

import nyala


def fnv_hash64(v):
    h = 0xCBF29CE484222325
    for _ in range(8):
        h ^= v & 0xFF
        v >>= 8
        h = (h * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h & 0x7FFFFFFFFFFFFFFF


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--master", required=True)
    p.add_argument("--table", default="usertable")
    p.add_argument("--records", type=int, default=1000000)
    p.add_argument("--threads", type=int, default=8)
    p.add_argument("--seconds", type=float, default=20)
    p.add_argument("--batch", type=int, default=1)
    args = p.parse_args()

    client = nyala.connect(args.master)
    table = client.table(args.table)
    # Keys made up front, as ycsb's are cheap in C++: the loop measures the reads.
    keys = ["user%d" % fnv_hash64(i) for i in range(args.records)]
    reads = [0] * args.threads
    misses = [0] * args.threads
    stop = time.monotonic() + args.seconds
    start_gate = threading.Barrier(args.threads + 1)

    def reader(t):
        rng = random.Random(t)
        n = len(keys)
        start_gate.wait()
        done = missed = 0
        if args.batch <= 1:
            get = table.get
            while time.monotonic() < stop:
                for _ in range(64):
                    if get(keys[rng.randrange(n)]) is None:
                        missed += 1
                done += 64
        else:
            multi_get = table.multi_get
            while time.monotonic() < stop:
                got = multi_get([keys[rng.randrange(n)] for _ in range(args.batch)])
                missed += sum(1 for r in got if r is None)
                done += args.batch
        reads[t] = done
        misses[t] = missed

    threads = [threading.Thread(target=reader, args=(t,)) for t in range(args.threads)]
    for t in threads:
        t.start()
    start_gate.wait()
    began = time.monotonic()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - began
    print("python reads/s: %.0f (%d threads, batch %d, %d misses)" %
          (sum(reads) / elapsed, args.threads, args.batch, sum(misses)))
    return 0 if sum(misses) == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
