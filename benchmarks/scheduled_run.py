"""The cost of a scheduled run (a monitoring deployment's `newsdedup crawl` every few minutes): a run that finds
``--new`` new articles and one that finds none, against a store of N stories in the window with its persisted state,
beside the same runs on an empty store, rounds interleaved.

    nice -n 19 python benchmarks/scheduled_run.py --sizes 200000 --rounds 3 --root /work/bench-data/scheduled

The stores are benchmarks/crawl_startup.py's (``ROOT/store-N-TEXTS.sqlite``: N stories over the last 29 days, 5%
near copies, the Sina texts of the shared data; written once in a child and kept), copied to ``ROOT/run-N.sqlite``.
Its state (``run-N.sqlite.state``, the crawl's default folder) is built by crawl_startup's ``build`` and ``reuse``
steps (the reuse snapshot drawn above ``--reuse-real-limit`` stories, as there), or, with ``--first-build``, by a
real first crawl of the store (every centre's text winnowed: minutes a 100,000 stories), whose wall time and peak
memory are the "first build" row.

A local portal on 127.0.0.1 serves, for each round and store, a list page of ``--new`` article links never seen
before (each article three paragraphs of three different Sina texts, so it is new to the store: neither an exact
copy nor a near one of a stored story). Each round runs, for each store in turn: the **new** run (that list page,
its ``--new`` articles fetched, extracted by the workers, deduplicated and stored) then the **nothing** run (the same
list page again: every link is known to the URL filter, nothing is fetched but robots.txt and the list page). Both
stores grow by ``--new`` stories a round. The crawl is the real ``newsdedup crawl`` with its defaults (two worker
processes on this machine, the state folder beside the store), ``-s LOG_LEVEL=WARNING``, its politeness off for the
local portal (``DOWNLOAD_DELAY=0``, no AutoThrottle: with a portal's 1 s delay the new run's 100 pages took 125 s,
which hid what they cost), Python's compiled modules kept as an installed package keeps them. Each store's first run
after its state was written (it hashes and marks the state's files, and at 1,000,000 stories merged the build's
segments) is printed apart, as round 0.

``--cold`` drops the page cache (``sync; echo 3 > /proc/sys/vm/drop_caches``, root) before every run, so each one
reads the interpreter, the libraries, the store and the state from the disk; without it the runs are warm (what the
previous run read is in the page cache). Figures a run: wall time; CPU (``wait4``'s rusage of the crawl process,
which includes its worker processes once it has waited for them); the crawl process's peak resident memory (its
VmHWM, read by the stats collector this script installs, ``JsonStats``); and where the fixed cost goes, from the
crawl's own stats and the times ``JsonStats`` records: ``boot`` (process start to the crawler made: interpreter,
Scrapy and newsdedup imports, the checks of the site file, settings and store), ``open`` (to the spider open: the
URL filter's open, the pipelines' open with the worker pool's start and the dedup state's open), ``urls`` /
``state`` / ``reuse`` (the URL filter's, the exact filter and SpotSigs index's, and the reuse snapshot's open within
it), ``crawl`` (to the spider's close), ``close`` (the close: workers stopped, the state and reuse snapshot saved)
and ``exit`` (the close's end to the process's exit). The ratios divide a store's median by the empty store's median
in the same rounds.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from scrapy import signals
from scrapy.statscollectors import MemoryStatsCollector

HERE = Path(__file__).resolve().parent
STARTUP = HERE / "crawl_startup.py"
DEFAULT_DATA = HERE.parent.parent / "shared" / "data"  # as benchmarks/index_scaling.py
STATS_ENV = "NEWSDEDUP_BENCH_STATS"


class JsonStats(MemoryStatsCollector):
    """The crawl's stats collector, writing the stats, the times of the crawl's phases and the process's peak memory
    to the file named by $NEWSDEDUP_BENCH_STATS when the spider closes (after the pipelines and the URL filter
    closed and saved)."""

    def __init__(self, crawler):
        super().__init__(crawler)
        self.times = {"crawler": time.time()}
        # The engine closes the spider right after its last idle signal: the crawl's pages are done, the closing
        # work (workers stopped, the state saved) begins.
        crawler.signals.connect(self._idle, signal=signals.spider_idle)

    def _idle(self):
        self.times["spider_closing"] = time.time()

    def open_spider(self, *args, **kwargs):
        self.times["opened"] = time.time()
        super().open_spider(*args, **kwargs)

    def _persist_stats(self, stats, *args):
        super()._persist_stats(stats, *args)
        self.times["closed"] = time.time()
        self.times["spider_closing"] = self.times.get("spider_closing", self.times["closed"])
        own = resource.getrusage(resource.RUSAGE_SELF)
        with open("/proc/self/status") as status:
            hwm = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
        Path(os.environ[STATS_ENV]).write_text(json.dumps({
            "stats": {k: v for k, v in stats.items() if isinstance(v, (int, float, str))},
            "times": self.times, "own_cpu_s": own.ru_utime + own.ru_stime, "vm_hwm_mb": hwm / 1024}))


# -- the portal ------------------------------------------------------------------------------------------------
def sina_texts(data: Path) -> list[list[str]]:
    """The Sina texts' paragraphs (texts of at least three)."""
    with gzip.open(next((data / "sina-news-2018").glob("*.jsonl.gz")), "rt", encoding="utf-8") as lines:
        texts = [[p.strip() for p in json.loads(line)["text"].split("\n") if p.strip()] for line in lines]
    return [paragraphs for paragraphs in texts if len(paragraphs) >= 3]


class Portal:
    """Batches of new articles: ``/BATCH/index.html`` lists ``/BATCH/news/K.html``, K < new."""

    def __init__(self, texts: list[list[str]], new: int) -> None:
        self.texts, self.new = texts, new
        self.served: dict[str, int] = {}

    def article(self, batch: str, k: int) -> str:
        rng = random.Random(f"{batch}/{k}")
        picked = rng.sample(self.texts, 3)
        paragraphs = [p for text in picked for p in text[rng.randrange(len(text) - 2):][:3]]
        body = "\n".join(f"<p>{p}</p>" for p in paragraphs)
        nav = "".join(f'<li><a href="/{batch}/index.html">栏目 {i}</a></li>' for i in range(20))
        return (f"<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>新闻 {batch} {k}</title></head><body>"
                f"<div class=\"nav\"><ul>{nav}</ul></div><div class=\"article\"><h1>新闻 {batch} {k}</h1>"
                f"<div class=\"time\">2026-11-28 08:00</div>{body}</div>"
                f"<div class=\"footer\">版权所有 本地新闻网 京ICP证000000号</div></body></html>")

    def page(self, path: str) -> str | None:
        parts = path.strip("/").split("/")
        if path == "/robots.txt":
            return "User-agent: *\nAllow: /\n"
        if len(parts) == 2 and parts[1] == "index.html":
            links = "".join(f'<li><a href="/{parts[0]}/news/{k}.html">新闻标题 {k}</a></li>' for k in range(self.new))
            return f"<html><head><meta charset=\"utf-8\"><title>列表</title></head><body><ul>{links}</ul></body></html>"
        if len(parts) == 3 and parts[1] == "news" and parts[2].endswith(".html"):
            self.served[parts[0]] = self.served.get(parts[0], 0) + 1
            return self.article(parts[0], int(parts[2][:-5]))
        return None


@contextmanager
def serving(portal: Portal):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):  # noqa: N802
            text = portal.page(self.path)
            body = (text or "not found").encode()
            self.send_response(200 if text is not None else 404)
            self.send_header("Content-Type", "text/plain" if self.path.endswith(".txt") else "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


# -- one crawl ---------------------------------------------------------------------------------------------------
def drop_caches() -> None:
    subprocess.run(["sync"], check=True)
    Path("/proc/sys/vm/drop_caches").write_text("3\n")


POLITENESS_OFF = ["-s", "DOWNLOAD_DELAY=0", "-s", "AUTOTHROTTLE_ENABLED=False",
                  "-s", "CONCURRENT_REQUESTS_PER_DOMAIN=8"]
PROFILE: Path | None = None  # --profile: each crawl sampled by py-spy into this folder (collapsed stacks)


def crawl(db: Path, base: str, batch: str, *, cold: bool, extra: list[str] = POLITENESS_OFF) -> dict:
    """One `newsdedup crawl` of the batch's list page; its figures."""
    folder = Path(tempfile.mkdtemp(prefix="scheduled-"))
    sites, stats_file = folder / "sites.toml", folder / "stats.json"
    sites.write_text(f'[[site]]\nname = "local"\nstart_urls = ["{base}/{batch}/index.html"]\n'
                     'allowed_domains = ["127.0.0.1"]\n'
                     "article_url_pattern = 'http://127\\.0\\.0\\.1:\\d+/[^/]+/news/\\d+\\.html'\n")
    command = [str(Path(sys.executable).with_name("newsdedup")), "crawl", "-a", f"sites={sites}",
               "-s", f"NEWSDEDUP_STORAGE_URI=sqlite:///{db}", "-s", "LOG_LEVEL=WARNING",
               "-s", "TELNETCONSOLE_ENABLED=False", "-s", "STATS_CLASS=scheduled_run.JsonStats", *extra]
    # Compiled modules kept, as an installed package has them (this machine's sessions set PYTHONDONTWRITEBYTECODE).
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}, STATS_ENV: str(stats_file),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")]))}
    if PROFILE is not None:
        PROFILE.mkdir(parents=True, exist_ok=True)
        command = ["py-spy", "record", "-r", "250", "-f", "raw", "-o", str(PROFILE / f"{db.stem}-{batch}-"
                   f"{int(time.time())}.txt"), "--subprocesses", "--", *command]
    if cold:
        drop_caches()
    started = time.time()
    wall = time.perf_counter()
    process = subprocess.Popen(command, cwd=folder, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - wall
    ended = started + seconds
    code = os.waitstatus_to_exitcode(status)
    error = process.stderr.read().decode(errors="replace")
    process.stderr.close()
    if code != 0 or not stats_file.exists():
        raise SystemExit(f"the crawl exited {code}: {error[-3000:]}")
    dump = json.loads(stats_file.read_text())
    shutil.rmtree(folder)
    stats, times = dump["stats"], dump["times"]
    cpu = usage.ru_utime + usage.ru_stime
    return {
        "s": round(seconds, 3), "cpu_s": round(cpu, 3), "crawl_cpu_s": round(dump["own_cpu_s"], 3),
        "workers_cpu_s": round(cpu - dump["own_cpu_s"], 3), "peak_mb": round(dump["vm_hwm_mb"]),
        "ru_maxrss_mb": round(usage.ru_maxrss / 1024),
        "fetched": stats.get("newsdedup/site/local/fetched", 0), "known": stats.get("newsdedup/site/local/known", 0),
        "stored": sum(stats.get(f"newsdedup/site/local/{k}", 0) for k in ("unique", "near_duplicate", "repeat")),
        "boot_s": round(times["crawler"] - started, 3), "open_s": round(times["opened"] - times["crawler"], 3),
        "urls_s": stats.get("newsdedup/state/urls_opened_s"), "state_s": stats.get("newsdedup/state/opened_s"),
        "reuse_s": stats.get("newsdedup/state/reuse_opened_s"), "save_s": stats.get("newsdedup/state/saved_s"),
        "crawl_s": round(times["spider_closing"] - times["opened"], 3),
        "close_s": round(times["closed"] - times["spider_closing"], 3), "exit_s": round(ended - times["closed"], 3),
        "rebuilt": stats.get("newsdedup/state/rebuilt"), "caught_up_rows": stats.get("newsdedup/state/caught_up_rows"),
    }


# -- the stores ----------------------------------------------------------------------------------------------------
def startup_child(*arguments: str) -> dict:
    """A step of benchmarks/crawl_startup.py (``--child KIND A B``), in its own process."""
    out = subprocess.run([sys.executable, str(STARTUP), *arguments], check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def prepare(root: Path, size: int, *, data: Path, reuse_real_limit: int, first_build: bool, base: str) -> dict:
    """``ROOT/run-SIZE.sqlite`` and its state, built; the build's figures."""
    started = time.perf_counter()
    startup_child("--child", "store", str(root), str(size), "--data", str(data))
    kind = "sina" if (data / "sina-news-2018").is_dir() else "synthetic"
    source, db = root / f"store-{size}-{kind}.sqlite", root / f"run-{size}.sqlite"
    state = Path(f"{db}.state")
    shutil.rmtree(state, ignore_errors=True)
    db.unlink(missing_ok=True)
    shutil.copyfile(source, db)
    figures = {"store_s": round(time.perf_counter() - started, 1)}
    if first_build:  # a real crawl builds it: the state folder does not exist yet
        drop_caches()
        figures["first_build"] = crawl(db, base, f"build-{size}", cold=False)
    else:
        figures["build"] = startup_child("--child", "build", str(db), str(state))
        figures["reuse_build"] = startup_child("--child", "reuse", str(db), str(state), "--reuse-real-limit",
                                               str(reuse_real_limit))
    figures["state_mb"] = round(sum(f.stat().st_size for f in state.rglob("*") if f.is_file()) / 2**20)
    return figures


def median(runs: list[dict], key: str):
    values = [r[key] for r in runs if r.get(key) is not None]
    return round(statistics.median(values), 3) if values else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[200_000])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--new", type=int, default=100, help="new articles the portal lists a round")
    parser.add_argument("--cold", action="store_true", help="drop the page cache before every run (root)")
    parser.add_argument("--both", action="store_true", help="each run warm, then the same run cold, in each round")
    parser.add_argument("--first-build", action="store_true", help="the state built by a real first crawl")
    parser.add_argument("--reuse-real-limit", type=int, default=100_000)
    parser.add_argument("--root", type=Path, default=Path("/work/bench-data/scheduled"))
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--keep", action="store_true", help="keep run-N.sqlite and its state for another run")
    parser.add_argument("--reuse-prepared", action="store_true",
                        help="use run-N.sqlite and its state as left by --keep")
    parser.add_argument("--profile", type=Path, default=None, help="sample each crawl with py-spy into this folder")
    args = parser.parse_args()
    global PROFILE
    PROFILE = args.profile
    args.root.mkdir(parents=True, exist_ok=True)
    portal = Portal(sina_texts(args.data), args.new)
    sizes = [0] + sorted(args.sizes)
    modes = ["warm", "cold"] if args.both else ["cold" if args.cold else "warm"]
    print(json.dumps({"load_average_before": os.getloadavg(), "modes": modes}), flush=True)
    with serving(portal) as base:
        for size in sizes:
            if args.reuse_prepared and Path(args.root / f"run-{size}.sqlite.state").is_dir():
                continue
            figures = prepare(args.root, size, data=args.data, reuse_real_limit=args.reuse_real_limit,
                              first_build=args.first_build, base=base)
            print(json.dumps({"stories": size, **figures}), flush=True)
        for size in sizes:  # the first run after the state was written: it hashes and marks the state's files
            run = crawl(args.root / f"run-{size}.sqlite", base, f"first-{size}-{int(time.time())}", cold=False)
            print(json.dumps({"round": 0, "stories": size, "run": "first new", "mode": "warm", **run}), flush=True)
        runs: dict[tuple[int, str, str], list[dict]] = {}
        for round_ in range(args.rounds):
            for size in sizes:
                db = args.root / f"run-{size}.sqlite"
                batch = f"r{round_}-{size}-{int(time.time())}"
                for kind in ("new", "nothing"):
                    for mode in modes:
                        if kind == "new" and mode == "cold" and "warm" in modes:
                            continue  # a batch's articles are new once: the new run is measured warm with --both
                        run = crawl(db, base, batch, cold=mode == "cold")
                        runs.setdefault((size, kind, mode), []).append(run)
                        print(json.dumps({"round": round_ + 1, "stories": size, "run": kind, "mode": mode,
                                          "load": os.getloadavg()[0], **run}), flush=True)
    print(json.dumps({"load_average_after": os.getloadavg()}), flush=True)
    keys = ["s", "cpu_s", "crawl_cpu_s", "workers_cpu_s", "peak_mb", "boot_s", "open_s", "urls_s", "state_s",
            "reuse_s", "crawl_s", "close_s", "save_s", "exit_s"]
    print("| stories | run | mode | wall s (rounds) | x empty | CPU s | x empty | peak MB | boot / open (urls, state, "
          "reuse) / crawl / close (state saved) / exit, s |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for (size, kind, mode), values in sorted(runs.items()):
        m = {k: median(values, k) for k in keys}
        base_runs = runs[(0, kind, mode)]
        ratio = m["s"] / median(base_runs, "s")
        cpu_ratio = m["cpu_s"] / median(base_runs, "cpu_s")
        print(f"| {size:,} | {kind} | {mode} | {m['s']} ({', '.join(str(v['s']) for v in values)}) | {ratio:.2f} | "
              f"{m['cpu_s']} | {cpu_ratio:.2f} | {m['peak_mb']} | {m['boot_s']} / {m['open_s']} ({m['urls_s']}, "
              f"{m['state_s']}, {m['reuse_s']}) / {m['crawl_s']} / {m['close_s']} ({m['save_s']}) / {m['exit_s']} |")
    if not args.keep:
        for size in sizes:
            shutil.rmtree(args.root / f"run-{size}.sqlite.state", ignore_errors=True)
            (args.root / f"run-{size}.sqlite").unlink(missing_ok=True)


if __name__ == "__main__":
    main()
