"""A bare crawl (no pipeline) of 600 pages of 127 KB from ``python -m http.server``: asyncio vs epoll reactor.

    python benchmarks/reactor_bare.py [--rounds 2]

Issue 13 reported 30 s with Scrapy's default asyncio reactor at ``CONCURRENT_REQUESTS_PER_DOMAIN=8`` (45 s at 2)
against 2 s with the epoll reactor, with the same CPU time. This measures both reactors at 8 and 2, on pages that
declare their charset and on pages that do not (Scrapy then guesses it with charset-normalizer when a middleware
reads the text: MetaRefreshMiddleware does, on every HTML response). Wall and CPU seconds of the crawl process,
medians of the rounds, interleaved. docs/performance.md and CHANGELOG.md have the figures.
"""

from __future__ import annotations

import argparse
import itertools
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# The throw-away servers of the tests (tests/servers.py).
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from servers import free_port  # noqa: E402

REACTORS = {"asyncio": "twisted.internet.asyncioreactor.AsyncioSelectorReactor",
            "epoll": "twisted.internet.epollreactor.EPollReactor"}
SPIDER = """
import sys, time, scrapy
from scrapy.crawler import CrawlerProcess
base, reactor, per_domain = sys.argv[1], sys.argv[2], int(sys.argv[3])
class Bare(scrapy.Spider):
    name = "bare"
    async def start(self):
        for i in range(600):
            yield scrapy.Request(f"{base}/{i}.html")
    def parse(self, response):
        pass
process = CrawlerProcess({"LOG_LEVEL": "ERROR", "CONCURRENT_REQUESTS_PER_DOMAIN": per_domain, "TWISTED_REACTOR": reactor,
                          "TELNETCONSOLE_ENABLED": False, "REMOTE_CONTROL_ENABLED": False})
started, cpu = time.perf_counter(), time.process_time()
process.crawl(Bare)
process.start()
print(time.perf_counter() - started, time.process_time() - cpu)
"""


def write_site(root: Path, *, charset: bool) -> None:
    head = '<html><head><meta charset="utf-8"></head><body>' if charset else "<html><body>"
    body = (head + ("<p>" + "新闻正文内容，记者从有关部门获悉。" * 20 + "</p>\n") * 200).encode()[:127_000]
    root.mkdir(parents=True)
    for i in range(600):
        (root / f"{i}.html").write_bytes(body)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="newsdedup-reactor-"))
    results: dict[tuple, list[tuple[float, float]]] = {}
    servers = {}
    try:
        for charset in (True, False):
            root = workdir / ("charset" if charset else "no-charset")
            write_site(root, charset=charset)
            port = free_port()
            servers[charset] = (subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
                                                 cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL), port)
        time.sleep(1)
        for _, charset, reactor, per_domain in itertools.product(range(args.rounds), (True, False), REACTORS, (8, 2)):
            out = subprocess.run([sys.executable, "-c", SPIDER, f"http://127.0.0.1:{servers[charset][1]}",
                                  REACTORS[reactor], str(per_domain)], capture_output=True, text=True, check=True)
            wall, cpu = map(float, out.stdout.split())
            results.setdefault((charset, reactor, per_domain), []).append((wall, cpu))
    finally:
        for process, _ in servers.values():
            process.terminate()
        shutil.rmtree(workdir, ignore_errors=True)
    print("charset declared  reactor  per domain  wall s  cpu s (medians)")
    for (charset, reactor, per_domain), runs in results.items():
        print(f"{'yes' if charset else 'no':17s} {reactor:8s} {per_domain:10d} {statistics.median(w for w, _ in runs):7.1f} "
              f"{statistics.median(c for _, c in runs):6.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
