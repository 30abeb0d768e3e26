"""Bloom filters of the exact stage and the URL filter: measured false-positive rate and size.

    python benchmarks/bloom_bench.py [--keys 200000]

For each configuration: insert ``--keys`` random 16-byte fingerprints, query as many keys never
inserted, and report the measured false-positive rate against the requested bound, and bits per
key against the optimum ``-log2(p)/ln 2``.  Compares pybloom-live's ScalableBloomFilter (which
tightens by 0.9 and so tends to 9 p) with our BoundedBloomFilter (tightening 0.5, bounded by p),
both grown from a small initial capacity, and a filter sized up front.
"""

from __future__ import annotations

import argparse
import json
import os
import time

from pybloom_live import ScalableBloomFilter

from newsdedup.dedup.bloom import BoundedBloomFilter, optimal_bits_per_key


def measure(name: str, bloom, keys: int, rate: float, queries: int) -> dict:
    inserted = [os.urandom(16) for _ in range(keys)]
    started = time.perf_counter()
    for key in inserted:
        bloom.add(key)
    add_us = (time.perf_counter() - started) / keys * 1e6
    started = time.perf_counter()
    false_positives = sum(os.urandom(16) in bloom for _ in range(queries))
    query_us = (time.perf_counter() - started) / queries * 1e6
    assert all(key in bloom for key in inserted[:10000]), "a Bloom filter must never forget a key"
    bits = sum(len(f.bitarray) for f in bloom.filters)
    return {
        "filter": name, "requested_p": rate, "measured_p": false_positives / queries,
        "bits_per_key": round(bits / keys, 2), "optimum_bits_per_key": round(optimal_bits_per_key(rate), 2),
        "bytes_per_key": round(bits / keys / 8, 2), "sub_filters": len(bloom.filters),
        "add_us": round(add_us, 2), "query_us": round(query_us, 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keys", type=int, default=200_000)
    parser.add_argument("--queries", type=int, default=1_000_000)
    args = parser.parse_args(argv)
    rows = []
    for rate in (1e-3, 1e-4):
        rows.append(measure("pybloom ScalableBloomFilter, grown", ScalableBloomFilter(
            initial_capacity=1000, error_rate=rate, mode=ScalableBloomFilter.LARGE_SET_GROWTH), args.keys, rate, args.queries))
        rows.append(measure("BoundedBloomFilter, grown", BoundedBloomFilter(1000, rate), args.keys, rate, args.queries))
        rows.append(measure("BoundedBloomFilter, sized", BoundedBloomFilter(args.keys, rate), args.keys, rate, args.queries))
    for row in rows:
        print(json.dumps(row))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
