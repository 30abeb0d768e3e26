"""What verifying the persisted dedup state's checksums costs at a crawl's start (issue 33).

    nice -n 19 python benchmarks/dedup_state_scale.py build --sizes 100000 1000000 --root ROOT
    nice -n 19 python benchmarks/state_verify.py --sizes 100000 1000000 --root ROOT

Uses the states ``dedup_state_scale.py build`` writes (``ROOT/stories-N/``: the near-duplicate index in segments of
a million stories, the exact and URL filters), each size in a fresh process:

* ``hash``: every file of the state hashed as the open verifies it (:func:`newsdedup.dedup.durable.file_digest`,
  XXH3-128 over 8 MB reads), the page cache warm (a second pass): bytes, seconds, GB/s, CPU seconds;
* ``open``: the three parts opened as a crawl start opens them (with the store mark), with verification and with the
  near index's verification switched off (the Bloom filters' is a hash of the bytes read, kept in both), warm, best
  of three;
* ``disk``: the disk's own read rate without the page cache (``dd iflag=direct`` over the largest segment file),
  what bounds a verification whose files are not cached (the first start after a reboot, or a state larger than
  the memory the page cache can keep).

The hash rates of XXH3-64, XXH3-128, CRC-32 (zlib) and BLAKE2b over 256 MB in memory are printed first. The reuse
snapshot (about as large again at a million stories) is hashed the same way: its cost scales with its bytes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import resource
import subprocess
import sys
import time
import zlib
from pathlib import Path

import numpy as np
import xxhash

from newsdedup.dedup import spotsigs_disk
from newsdedup.dedup.durable import file_digest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from dedup_state_scale import open_state  # noqa: E402


def in_memory_rates() -> dict[str, float]:
    """GB/s of each hash over 256 MB already in memory, best of three."""
    data = np.random.default_rng(1).integers(0, 255, size=256 << 20, dtype=np.uint8).tobytes()
    view = memoryview(data)

    def chunked(hasher):
        for start in range(0, len(view), 8 << 20):
            hasher.update(view[start:start + (8 << 20)])
        return hasher.digest()

    def crc32():
        value = 0
        for start in range(0, len(view), 8 << 20):
            value = zlib.crc32(view[start:start + (8 << 20)], value)
        return value

    rates = {}
    for name, run in (("xxh3_64", lambda: chunked(xxhash.xxh3_64())), ("xxh3_128", lambda: chunked(xxhash.xxh3_128())),
                      ("crc32", crc32), ("blake2b", lambda: chunked(hashlib.blake2b()))):
        best = min(_timed(run)[0] for _ in range(3))
        rates[name] = round(len(data) / best / 1e9, 2)
    return rates


def _timed(run):
    started, cpu = time.perf_counter(), time.process_time()
    result = run()
    return time.perf_counter() - started, time.process_time() - cpu, result


def state_files(folder: Path) -> list[Path]:
    return sorted(path for part in ("near", "exact", "urls") for path in (folder / part).rglob("*") if path.is_file())


def direct_read_rate(path: Path) -> float:
    """MB/s of ``dd iflag=direct`` reading ``path`` (at most 2 GB): the disk, not the page cache."""
    result = subprocess.run(["dd", f"if={path}", "of=/dev/null", "bs=16M", "count=128", "iflag=direct"],
                            capture_output=True, text=True, check=True)
    found = re.search(r"copied, ([\d.]+) s, ([\d.]+) ([GMk]B)/s", result.stderr)
    return float(found.group(2)) * {"GB": 1000, "MB": 1, "kB": 0.001}[found.group(3)]


def measure(folder: Path, size: int) -> dict:
    files = state_files(folder)
    total = sum(path.stat().st_size for path in files)
    for path in files:  # the first pass warms the page cache
        file_digest(path)
    wall, cpu, _ = _timed(lambda: [file_digest(path) for path in files])
    opened = {}
    for verified in (True, False):
        if not verified:
            spotsigs_disk.verify_file = lambda path, expected: None
        times = []
        for _ in range(3):
            elapsed, _, parts = _timed(lambda: open_state(folder, size - 1))
            parts[0].close()
            times.append(elapsed)
        opened["verified" if verified else "unverified"] = round(min(times), 3)
    largest = max(files, key=lambda path: path.stat().st_size)
    disk = direct_read_rate(largest)
    return {"size": size, "files": len(files), "bytes": total, "bytes_a_story": round(total / size),
            "hash_s": round(wall, 3), "hash_cpu_s": round(cpu, 3), "hash_gb_s": round(total / wall / 1e9, 2),
            "open_s": opened, "disk_direct_mb_s": disk,
            "cold_verify_s_estimate": round(total / (disk * 1e6) + wall, 1),
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--root", type=Path, default=Path("/work/bench-data"))
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.root / f"stories-{args.child}", args.child)))
        return
    print(json.dumps({"in_memory_gb_s": in_memory_rates()}), flush=True)
    for size in args.sizes:  # each size in a fresh process: nothing of another size in its memory
        result = subprocess.run([sys.executable, __file__, "--root", str(args.root), "--child", str(size)],
                                capture_output=True, text=True, check=True)
        print(result.stdout.strip(), flush=True)


if __name__ == "__main__":
    main()
