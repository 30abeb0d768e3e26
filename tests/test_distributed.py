"""The distributed crawl, as its users run it: real Redis and PostgreSQL, 2 ``scrapy crawl portal`` processes.

Both processes share scrapy-redis's queue and request filter, publish their analysed pages to one Redis stream,
and the one holding the store's run lock applies it (docs/distributed.md). The checks read the
PostgreSQL store and the local sites' request logs: every article page recorded exactly once, no story stored
as new twice, the same clusters as a single-process run, and nothing lost when a process is ``kill -9``ed.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter, defaultdict
from datetime import datetime, timezone
from urllib.parse import urlsplit

import psycopg
import pytest

from conftest import REPO_ROOT
from faultsite import FAST, FaultSite, kill, wait_for
from server_fixtures import postgres, redis_server  # noqa: F401 - fixtures
from local_site import newsdedup
from test_crawl_e2e import check_stories, check_story_rows, run_crawl
from newsdedup import defaults
from newsdedup.crawl.items import FetchFailure
from newsdedup.demo.content import load_manifest
from newsdedup.demo.server import DemoPortalServer
from newsdedup.distributed import wire


@pytest.fixture()
def servers(postgres, redis_server):  # noqa: F811 - fixtures
    """A new PostgreSQL database and a Redis key prefix of this test's own."""
    return postgres.create_database(f"dist_{uuid.uuid4().hex[:8]}"), redis_server.url, f"t{uuid.uuid4().hex[:8]}"


def worker_command(sites_file, servers, *extra: str) -> list[str]:
    store_uri, redis_url, prefix = servers
    return [
        sys.executable, "-m", "scrapy", "crawl", "portal", "-a", f"sites={sites_file}",
        "-s", f"NEWSDEDUP_STORAGE_URI={store_uri}", "-s", f"NEWSDEDUP_REDIS_URL={redis_url}",
        "-s", f"NEWSDEDUP_REDIS_PREFIX={prefix}", "-s", "NEWSDEDUP_WORKERS=1", *FAST, *extra,
    ]


def start_workers(sites_file, servers, logs, *extra: str) -> list[subprocess.Popen]:
    return [subprocess.Popen(worker_command(sites_file, servers, *extra), cwd=REPO_ROOT, stderr=subprocess.STDOUT,
                             stdout=open(log, "w", encoding="utf-8"))  # noqa: SIM115 - the worker writes to it
            for log in logs]


def finish(processes, logs, timeout: float = 180, *, status: int = 0) -> list[str]:
    texts = []
    for process, log in zip(processes, logs):
        process.wait(timeout=timeout)
        text = log.read_text(encoding="utf-8")
        assert process.returncode == status, text[-4000:]
        assert "Traceback" not in text, text[-4000:]
        texts.append(text)
    return texts


def stat(log: str, name: str) -> int:
    """A number from a crawl's closing stats dump (0 when absent)."""
    marker = f"'{name}': "
    at = log.rfind(marker)
    return int(log[at + len(marker):].split(",", 1)[0].split("}", 1)[0]) if at >= 0 else 0


def outcomes(store_uri: str) -> dict[str, list[tuple[str, str]]]:
    """Every URL the store recorded, with each (table, status) it is in."""
    found: dict[str, list[tuple[str, str]]] = defaultdict(list)
    with psycopg.connect(store_uri) as conn:
        if conn.execute("SELECT to_regclass('articles')").fetchone()[0] is None:
            return {}
        for table, column in (("articles", "status"), ("repeats", "'exact_duplicate'"), ("skipped", "reason"),
                              ("failures", "kind")):
            for url, what in conn.execute(f"SELECT url, {column} FROM {table}"):
                found[url].append((table, what))
    return dict(found)


def export(store_uri: str) -> list[dict]:
    result = newsdedup("export", "--storage", store_uri)
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def partition(rows: list[dict]) -> set[frozenset[str]]:
    """Clusters as sets of URL paths (ids differ between stores; the grouping must not)."""
    groups: dict[int, set[str]] = defaultdict(set)
    for row in rows:
        groups[row["cluster_id"]].add(urlsplit(row["url"]).path)
    return {frozenset(group) for group in groups.values()}


def test_the_run_looks_done_only_after_every_other_process_has_beaten_since(redis_server):  # noqa: F811
    """A busy flag read is up to a heartbeat old: the close check waits for a beat of each other process."""
    from newsdedup.distributed.redis_run import RedisRun, connect

    prefix = f"t{uuid.uuid4().hex[:8]}"
    first, second = (RedisRun(connect(redis_server.url), prefix) for _ in range(2))
    first.join()
    second.join()
    second.beat(busy=False)
    looked_done_at = first.now_ms()
    assert not first.others_busy()
    assert not first.others_beaten_since(looked_done_at)  # second's idle flag predates the moment
    while first.now_ms() <= looked_done_at:  # the server's clock past the moment (ms), however soon this runs
        pass
    second.beat(busy=False)
    assert first.others_beaten_since(looked_done_at)
    assert second.others_beaten_since(second.now_ms()) is False  # first has not beaten since
    first.leave()
    assert second.others_beaten_since(second.now_ms())  # nobody else left in the run


def test_a_process_holding_pages_is_neither_busy_nor_done(redis_server):  # noqa: F811
    """A process idle with pages held for a site's template: the others do not wait for it to read them (it waits
    for them), but the run is not done while it holds them."""
    from newsdedup.distributed.redis_run import RedisRun, connect

    prefix = f"t{uuid.uuid4().hex[:8]}"
    first, second = (RedisRun(connect(redis_server.url), prefix) for _ in range(2))
    first.join()
    second.join()
    second.beat(busy=False, holding=True)
    assert (first.others_busy(), first.others_holding()) == (0, 1)
    second.beat(busy=True)
    assert (first.others_busy(), first.others_holding()) == (1, 0)
    second.beat(busy=False)
    assert (first.others_busy(), first.others_holding()) == (0, 0)


def test_the_requests_a_dead_process_took_go_back_on_the_queue_once_and_a_live_ones_stay(redis_server):  # noqa: F811
    """The record of taken requests: a request taken is in it until finished; a process that stops beating has what
    is left in it queued again with its priority, by whichever live process looks first, once."""
    from newsdedup.distributed.redis_run import RedisRun, connect

    prefix = f"t{uuid.uuid4().hex[:8]}"
    dying, live = RedisRun(connect(redis_server.url), prefix), RedisRun(connect(redis_server.url), prefix)
    dying.join()
    live.join()
    queue = dying.key("requests")
    client = dying.client
    client.zadd(queue, {b"list": -10, b"a1": 0, b"a2": 0, b"a3": 5})
    assert [dying.take(queue, token) for token in ("1", "2", "3")] == [b"list", b"a1", b"a2"]
    dying.finished(["2"])  # a1 published
    assert client.zrange(queue, 0, -1) == [b"a3"]
    assert live.requeue_dead(queue) == {}  # it beat within the last LIVENESS seconds: alive, its requests its own
    # Seen from a process that counts a beat older than 0.2 s as death (the crawl's LIVENESS is 10 s).
    impatient = RedisRun(connect(redis_server.url), prefix, worker=live.worker, liveness=0.2)
    impatient.run_id = live.run_id
    requeued = wait_for(lambda: impatient.requeue_dead(queue), 30, interval=0.05)
    assert requeued == {dying.worker: 2}
    assert client.zrange(queue, 0, -1, withscores=True) == [(b"list", -10.0), (b"a2", 0.0), (b"a3", 5.0)]
    assert impatient.requeue_dead(queue) == {} and not client.exists(dying.taken_key())
    live.take(queue, "1")
    live.leave()  # a process leaving forgets its record
    assert not client.exists(live.taken_key())


def test_templates_learn_from_every_processs_warm_up_pages_and_take_back_what_a_held_page_first_taught(redis_server):  # noqa: F811
    from newsdedup.distributed.redis_run import connect
    from newsdedup.distributed.shared_templates import SharedTemplates
    from newsdedup.extract.template import MIN_PAGES, SiteTemplate

    key = f"t{uuid.uuid4().hex[:8]}:template"
    mine, theirs = SharedTemplates(connect(redis_server.url), key, "a"), SharedTemplates(connect(redis_server.url), key, "b")
    hot, own = [11, 12, 13], [[100 + n, 200 + n] for n in range(MIN_PAGES)]
    template = SiteTemplate()
    pages = [template.learn(hot + body, body) for body in own]
    for n, page in enumerate(pages):
        mine.learned("qingshan", page, held=n == 0)
    other = SiteTemplate()
    assert theirs.catch_up("qingshan", other) == MIN_PAGES
    assert other.pages == MIN_PAGES and other.boilerplate() == template.boilerplate() == frozenset(hot)
    assert mine.catch_up("qingshan", template) == 0  # its own entries are not applied twice
    template.forget(pages[0])
    mine.forgot("qingshan", pages[0])
    mine.forgot("qingshan", pages[1])  # never held: nothing to take back
    assert theirs.catch_up("qingshan", other) == 1 and other.pages == MIN_PAGES - 1
    assert theirs.catch_up("another-site", SiteTemplate()) == 0
    # Redis lost the list (restarted empty): what is shared afterwards is read from the new list's start.
    mine.client.delete(mine.key("qingshan"))
    more = template.learn(hot + [300, 301], [300, 301])
    mine.learned("qingshan", more)
    assert theirs.catch_up("qingshan", other) == 1 and other.pages == MIN_PAGES
    assert theirs.catch_up("qingshan", other) == 0
    # "a" holds a page and dies before reading it again: a survivor takes back, for everyone, all "a" taught and did
    # not take back (the held page and the page shared since the list was lost): its taken pages are read again.
    held = template.learn(hot + [400, 401], [400, 401])
    mine.learned("qingshan", held, held=True)
    assert theirs.catch_up("qingshan", other) == 1 and other.pages == MIN_PAGES + 1
    assert theirs.forget_dead("a") == 2 and theirs.forget_dead("a") == 0  # once
    assert theirs.catch_up("qingshan", other) == 2 and other.pages == MIN_PAGES - 1


def test_two_workers_store_each_page_once_with_the_clusters_of_one_process(servers, tmp_path):
    manifest = load_manifest()
    day1 = manifest["by_day"][1]
    with DemoPortalServer(day=1) as server:
        sites_file = tmp_path / "sites.toml"
        sites_file.write_text(server.sites_toml(), encoding="utf-8")
        run_crawl(sites_file, tmp_path / "one.sqlite")  # the reference: one process, SQLite
        single = export(f"sqlite:///{tmp_path / 'one.sqlite'}")
        served_once = dict(server.requests_served)

        logs = [tmp_path / "w1.log", tmp_path / "w2.log"]
        # Few requests at a time, a quarter second apart, so that both processes take part in a site this small
        # (the second starts up to a second or two after the first).
        texts = finish(start_workers(sites_file, servers, logs, "-s", "CONCURRENT_REQUESTS=2",
                                     "-s", "DOWNLOAD_DELAY=0.25", "-s", "DOWNLOAD_DELAY_JITTER=0"), logs)
        for path in day1["new_article_pages"]:  # the shared request filter: each page fetched once by the two
            assert server.requests_served[path] - served_once[path] == 1, path

    rows = export(servers[0])
    assert sorted(r["url"] for r in rows) == sorted({r["url"] for r in rows})  # stored exactly once each
    assert {urlsplit(r["url"]).path for r in rows} == set(day1["new_article_pages"])
    check_stories(rows, manifest["pages"])  # no story stored as new twice; every reprint in its story
    assert [r["status"] for r in rows].count("unique") == day1["unique"]
    assert partition(rows) == partition(single)
    assert all(stat(text, "item_scraped_count") > 0 for text in texts), "one process did all the work"
    assert all(stat(text, "scheduler/dequeued/redis") > 0 for text in texts)
    assert not any("DeprecationWarning" in text for text in texts)  # scrapy-redis's stats calls, in every log
    # Each process's summary and verdict are the run's: its per-site counters include the other's fetches.
    fetched = [{site: stat(text, f"newsdedup/site/{site}/fetched") for site in re.findall(
        r"'newsdedup/site/([^/']+)/fetched'", text)} for text in texts]
    assert fetched[0] == fetched[1]
    assert sum(fetched[0].values()) == sum(stat(text, "newsdedup/crawl/article_pages") for text in texts)
    # Stored pages too, although only the writer stored them; and the run is recorded once per site, under
    # the run's start, with the run's figures (not one row per process with its own share).
    stored = [{site: (stat(text, f"newsdedup/site/{site}/unique"), stat(text, f"newsdedup/site/{site}/near_duplicate"),
                      stat(text, f"newsdedup/site/{site}/repeat")) for site in fetched[0]} for text in texts]
    assert stored[0] == stored[1]
    assert sum(u + n + r for u, n, r in stored[0].values()) == len(rows)  # the export lists repeats too
    with psycopg.connect(servers[0]) as conn:
        runs = conn.execute("SELECT site, fetched, stored FROM site_runs").fetchall()
    assert sorted(runs) == sorted((site, fetched[0][site], u + n) for site, (u, n, _) in stored[0].items())
    assert sum("is the writer now" in text for text in texts) >= 1


class StreamWatch:
    """What the processes of a run publish to and delete from its result stream, seen through Redis's ``MONITOR``
    (every command the server runs, on a connection of the test's own, read from a thread): each ``XADD``'s entry
    and each ``XDEL``'s number of entries, with the server's time and the client connection that sent it."""

    _LINE = re.compile(rb"\+(\S+) \[\d+ (\S*)\] (.*)\r\n", re.S)
    _ARG = re.compile(rb'"((?:[^"\\]|\\.)*)"', re.S)
    _ESCAPE = re.compile(rb"\\(x[0-9a-fA-F]{2}|.)", re.S)
    _ESCAPED = {b"n": b"\n", b"r": b"\r", b"t": b"\t", b"a": b"\a", b"b": b"\b"}

    def __init__(self, redis_url: str, key: str) -> None:
        address = urlsplit(redis_url)
        self.key = key.encode()
        self.codec = wire.stream_codec()
        self.published: list[tuple[float, str, object]] = []
        self.deleted: list[tuple[float, str, int]] = []
        self._address = (address.hostname, address.port)
        self._marker = f"streamwatch-stop-{uuid.uuid4().hex}".encode()
        self._marked = threading.Event()  # the reader saw the marker: every command before it was read
        self._socket = socket.create_connection(self._address)
        self._socket.sendall(b"MONITOR\r\n")
        self._lines = self._socket.makefile("rb")
        assert self._lines.readline() == b"+OK\r\n"
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _unescape(self, arg: bytes) -> bytes:
        """An argument as Redis printed it (sdscatrepr: C escapes, \\xHH for other bytes) back to its bytes."""
        def one(match: re.Match) -> bytes:
            code = match.group(1)
            return bytes([int(code[1:], 16)]) if len(code) == 3 else self._ESCAPED.get(code, code)

        return self._ESCAPE.sub(one, arg)

    def _read(self) -> None:
        try:
            for line in self._lines:
                if self._marker in line:
                    self._marked.set()
                    continue
                match = self._LINE.fullmatch(line)
                if match is None:
                    continue
                when, client, command = float(match.group(1)), match.group(2).decode(), match.group(3)
                args = [self._unescape(arg) for arg in self._ARG.findall(command)]
                if len(args) < 2 or args[1] != self.key:
                    continue
                if args[0].upper() == b"XADD":  # XADD key * e <entry, encoded as data by newsdedup.distributed.wire>
                    self.published.append((when, client, self.codec.loads(args[args.index(b"e", 2) + 1])))
                elif args[0].upper() == b"XDEL":
                    self.deleted.append((when, client, len(args) - 2))
        except (OSError, ValueError):
            pass  # stop() closed the connection

    def stop(self) -> None:
        # MONITOR prints commands in the order the server ran them: once a command sent now is read back, the lines
        # of every command before it were read too (an event, not a guess of how long the reader takes).
        with socket.create_connection(self._address) as client:
            client.sendall(b"*2\r\n$4\r\nECHO\r\n$%d\r\n%s\r\n" % (len(self._marker), self._marker))
            assert client.recv(1024).startswith(b"$")
        assert self._marked.wait(60), "the MONITOR reader did not reach the marker"
        self._socket.shutdown(socket.SHUT_RDWR)
        self._socket.close()
        self._thread.join(10)


def published_url(entry) -> str:
    return entry.url if isinstance(entry, FetchFailure) else entry[0].url


def test_an_entry_a_stage_fails_on_costs_only_its_page_and_the_run_ends_with_exit_5(servers, tmp_path):
    """One entry of the stream makes the near stage raise (a bug of ours or of a library, on one page): the writer
    logs its traceback once, records the page as skipped (error) and goes on. Before, it read that entry again every
    second for ever, and the run, done only when the stream is empty, never ended. The poison is data the wire codec
    accepts (a spot counted 2**40 times: an int of a Counter[int]) that the SpotSigs index refuses (ValueError),
    published into the run's stream while one of the site's pages is being served, so the run cannot end first."""
    import redis

    from newsdedup.crawl.analysis import PageAnalysis
    from newsdedup.crawl.dupefilter import url_key
    from newsdedup.crawl.items import ArticlePage
    from newsdedup.dedup.features import DocFeatures
    from newsdedup.distributed.redis_run import ResultStream, UrlFilter
    from newsdedup.extract.extractor import Article
    from newsdedup.text.hashing import text_fingerprint

    store_uri, redis_url, prefix = servers
    client = redis.Redis.from_url(redis_url)
    with FaultSite(20) as site:
        poison = site.url("/a/999.html")  # listed nowhere: no process fetches it
        text = "这是一篇测试稿件，用来检验写入进程如何对待一个出错的页面。" * 5
        entry = (ArticlePage(url=poison, site="fault", body=b"", declared_encoding=None,
                             fetched_at=datetime.now(timezone.utc).isoformat(timespec="seconds")),
                 PageAnalysis(Article("出错的页面", text, None, None, None, None),
                              DocFeatures(fingerprint=text_fingerprint(text),
                                          spots=Counter({n: 1 for n in range(1, 40)} | {7: 2 ** 40}))))

        published = []

        def publish_poison(count: int, path: str, site: FaultSite):
            if count == 0:  # a process is fetching this page: the run is under way and not done
                published.append(ResultStream(client, prefix).publish(entry))
            return None  # then served as usual

        site.faults["/a/10.html"] = publish_poison
        sites_file = site.write_sites(tmp_path)
        logs = [tmp_path / "w1.log", tmp_path / "w2.log"]
        processes = start_workers(sites_file, servers, logs)
        try:
            for process in processes:
                process.wait(timeout=180)  # on the old code: for ever (the timeout fails the test)
        finally:
            for process in processes:
                kill(process.pid)
        assert site.served["/a/10.html"] >= 1
        found, pages = outcomes(store_uri), sorted(site.url(path) for path in site.article_paths)
        handled_page = url_key(site.url("/a/1.html"))
    texts = [log.read_text(encoding="utf-8") for log in logs]
    assert [process.returncode for process in processes] == [5, 5], [text[-3000:] for text in texts]
    assert found.pop(poison) == [("skipped", "error")]
    assert sorted(found) == pages  # every real page, once
    assert all(where == [("articles", "unique")] for where in found.values()), found
    # The failure's traceback once, in the writer's log, with the page's URL; nothing else failed.
    assert sum(text.count("Traceback") for text in texts) == 1, [text[-3000:] for text in texts]
    [writer_log] = [text for text in texts if "Traceback" in text]
    assert f"the writer could not apply {poison}" in writer_log and "ValueError" in writer_log
    for text in texts:  # every process's verdict is the run's
        assert stat(text, "newsdedup/site/fault/skipped/error") == 1
        assert "site fault: 1 page(s) not processed (error 1)" in text
    # Transient: listed by `newsdedup failures`, and not in the run's shared URL filter (a later run tries it again).
    failures = newsdedup("failures", "--storage", store_uri)
    assert failures.returncode == 0 and poison in failures.stdout, failures.stdout + failures.stderr
    handled = UrlFilter(client, prefix, retention_days=defaults.NEWSDEDUP_RETENTION_DAYS)
    assert handled_page in handled and url_key(poison) not in handled
    assert client.xlen(f"{prefix}:results") == 0
    # The verdict a publisher waits for (here the test published the entry, and nobody takes it off the board).
    [board] = client.keys(f"{prefix}:run:*:verdicts")
    verdict = json.loads(client.hget(board, published[0]))
    assert verdict["log_level"] == "ERROR" and verdict["dropped"].startswith("not processed (ValueError: "), verdict


@pytest.mark.parametrize("victim", ["writer", "member"])
def test_a_process_killed_mid_crawl_has_its_pages_fetched_again_in_the_same_run(servers, tmp_path, victim):
    """kill -9 of the writer, or of the process that only fetches: the survivor exits 0 only with the clean crawl's
    store. The dead process's fetched and unpublished pages (downloading, extracting, held) are queued again from
    its record of taken requests; what it applied as the writer and had not committed stays pending for the next."""
    import redis

    store_uri, redis_url, prefix = servers
    client = redis.Redis.from_url(redis_url)
    watch = StreamWatch(redis_url, f"{prefix}:results")
    with FaultSite(80, per_list=40, reprints=REPRINTS) as site:
        sites_file = site.write_sites(tmp_path)
        reference = run_crawl(sites_file, tmp_path / "clean.sqlite")  # one process, no fault
        clean = partition(export(f"sqlite:///{tmp_path / 'clean.sqlite'}"))
        assert "exit status 0 (ok)" in reference
        served_clean = dict(site.served)
        # The run's pages after its first 20 are held until the victim is dead: the victim still has requests taken
        # (held) when the test looks, and the survivor still fetches and publishes after the kill, so the stream has
        # entries only a new writer can apply (all served at once, the dead writer could have applied every page
        # before the kill, and the survivor would rightly never need to take over), however fast the machine.
        killed = site.hold_articles(after=20, until=threading.Event())
        logs = [tmp_path / "w1.log", tmp_path / "w2.log"]
        processes = start_workers(sites_file, servers, logs, "-s", "CONCURRENT_REQUESTS_PER_DOMAIN=2")
        try:
            writer = wait_for(lambda: [i for i, log in enumerate(logs)
                                       if "is the writer now" in log.read_text(encoding="utf-8")], 120)[0]
            wait_for(lambda: len(outcomes(store_uri)) >= 10, 120, interval=0.05)
            dead = writer if victim == "writer" else 1 - writer
            # Killed while it has requests taken off the run's queue (its record: <prefix>:run:<id>:taken:<worker>,
            # the worker named host:pid:suffix).
            wait_for(lambda: any(client.hlen(key) for key in client.scan_iter(
                f"{prefix}:run:*:taken:*:{processes[dead].pid}:*")), 120, interval=0.01)
            kill(processes[dead].pid)
            processes[dead].wait(timeout=30)
            killed_at = time.time()  # MONITOR's times are the server's clock, on this machine
            killed.set()
            survivor = 1 - dead
            [survivor_log] = finish([processes[survivor]], [logs[survivor]])  # exit 0
        finally:
            killed.set()
            for process in processes:
                kill(process.pid)
            watch.stop()
        served_run = {path: site.served[path] - served_clean.get(path, 0) for path in site.article_paths}
        # The start page once in the run: a list page is finished as its links are queued, so the dead process's
        # record did not hold it.
        assert site.served["/list/1.html"] - served_clean["/list/1.html"] == 1
        # The one run stored what the clean crawl stores: every article once, the same clusters.
        check_consistent(site, store_uri, complete=True)
        assert partition(export(store_uri)) == clean
        # The survivor queued the dead process's unfinished requests again, and named it.
        requeued = stat(survivor_log, "newsdedup/distributed/requeued")
        assert requeued > 0 and "stopped beating with" in survivor_log
        assert sum(count > 1 for count in served_run.values()) <= requeued  # fetched twice: only pages taken by the dead
        if victim == "writer":
            assert "is the writer now" in survivor_log  # took over the stream ...
            # ... opening the dedup state the dead writer kept (its machine's copy), caught up, not rebuilt.
            assert "'newsdedup/state/rebuilt': 0" in survivor_log
            # The survivor applied exactly the entries the dead writer had not committed and deleted: those it left
            # pending, then every later one (the dead process's pages fetched again among them).
            published = [entry for _, _, entry in watch.published]
            dead_writer = {client for when, client, _ in watch.deleted if when < killed_at}
            deleted_by_dead_writer = sum(count for _, client, count in watch.deleted if client in dead_writer)
            assert 0 < deleted_by_dead_writer < len(published)
            assert stat(survivor_log, "newsdedup/writer/applied") == len(published) - deleted_by_dead_writer

        rerun_logs = [tmp_path / "r1.log", tmp_path / "r2.log"]
        finish(start_workers(sites_file, servers, rerun_logs), rerun_logs)  # nothing left to fetch, nothing changes
        check_consistent(site, store_uri, complete=True)
        assert partition(export(store_uri)) == clean


def test_a_writer_whose_acknowledgement_fails_commits_that_batch_again_and_applies_nothing_twice(servers, tmp_path):
    """Redis refuses the writer's acknowledgement of a committed batch (the run's verdict board is not a hash): the
    writer tries that batch's acknowledgement again, reading nothing more meanwhile. Before, each attempt read the
    batch's entries again from the stream's pending list: applied twice (verdicts "already stored"), and appended
    again to the unacknowledged list, which grew with every failed attempt."""
    import redis

    store_uri, redis_url, prefix = servers
    client = redis.Redis.from_url(redis_url)
    run_id = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]
    client.set(f"{prefix}:run", run_id, px=120_000)  # the run the worker joins, opened beforehand
    board = f"{prefix}:run:{run_id}:verdicts"
    client.set(board, "not a hash")  # HSET and HMGET on it fail: WRONGTYPE
    with FaultSite(30) as site:
        sites_file = site.write_sites(tmp_path)
        log = tmp_path / "w1.log"
        [process] = start_workers(sites_file, servers, [log])
        try:
            wait_for(lambda: log.read_text(encoding="utf-8").count("could not be acknowledged in Redis") >= 3, 120)
            client.delete(board)
            process.wait(timeout=180)
        finally:
            kill(process.pid)
        check_consistent(site, store_uri, complete=True)
    text = log.read_text(encoding="utf-8")
    assert process.returncode == 0, text[-4000:]
    assert stat(text, "newsdedup/writer/applied") == 30  # each entry once
    assert stat(text, "newsdedup/extract/already_stored") == 0
    assert stat(text, "item_scraped_count") == 30  # every page's item with its verdict, none "already stored"
    assert client.xlen(f"{prefix}:results") == 0


def run_with_a_fault(site, sites_file, servers, tmp_path, fault, *extra: str) -> tuple[list, list[str]]:
    """Two workers of one run crawling ``site``; ``fault()`` once the store holds 10 outcomes, with the run's pages
    after its first 20 held until it ran, so it comes mid-run however fast the machine; both waited for. Their
    processes and logs."""
    faulted = site.hold_articles(after=20, until=threading.Event())
    logs = [tmp_path / "w1.log", tmp_path / "w2.log"]
    processes = start_workers(sites_file, servers, logs, "-s", "CONCURRENT_REQUESTS_PER_DOMAIN=2", *extra)
    try:
        wait_for(lambda: len(outcomes(servers[0])) >= 10, 120, interval=0.05)
        fault()
        faulted.set()
        for process in processes:
            process.wait(timeout=180)
    finally:
        faulted.set()
        for process in processes:
            kill(process.pid)
    return processes, [log.read_text(encoding="utf-8") for log in logs]


def test_redis_killed_and_restarted_empty_mid_run_fails_the_run_and_the_rerun_completes(postgres, tmp_path):  # noqa: F811
    """Redis lost with its data (kill -9, no persistence) while two processes crawl: the run's queue, request
    filter, stream and records of taken requests are gone. The processes say so and exit 5 (pages not processed:
    what was queued or published is not in the store); nothing is stored twice, and the next run stores the rest,
    with the clean crawl's clusters."""
    from servers import RedisServer

    redis_server = RedisServer(tmp_path / "redis")  # the test's own: it kills it
    try:
        store_uri = postgres.create_database(f"dist_{uuid.uuid4().hex[:8]}")
        servers = (store_uri, redis_server.url, f"t{uuid.uuid4().hex[:8]}")
        with FaultSite(80, per_list=40, reprints=REPRINTS) as site:
            sites_file = site.write_sites(tmp_path)
            run_crawl(sites_file, tmp_path / "clean.sqlite")
            clean = partition(export(f"sqlite:///{tmp_path / 'clean.sqlite'}"))
            processes, texts = run_with_a_fault(site, sites_file, servers, tmp_path, redis_server.restart_empty)
            # Each process saw the loss itself (its marker in the run gone, or the stream's group) and fails its run.
            assert [process.returncode for process in processes] == [5, 5], [t[-3000:] for t in texts]
            for text in texts:
                assert "in Redis was lost mid-run (Redis restarted empty or flushed)" in text
                assert stat(text, "newsdedup/redis/lost") == 1
            check_consistent(site, store_uri, complete=False)  # nothing stored twice, every reprint in its story
            rerun_logs = [tmp_path / "r1.log", tmp_path / "r2.log"]
            finish(start_workers(sites_file, servers, rerun_logs), rerun_logs)
            check_consistent(site, store_uri, complete=True)
            assert partition(export(store_uri)) == clean
    finally:
        redis_server.stop()


def test_redis_gone_for_good_mid_run_stops_each_process_with_exit_5_and_the_rerun_completes(postgres, tmp_path):  # noqa: F811
    """Redis killed and not started again: each process waits NEWSDEDUP_REDIS_GIVE_UP_AFTER seconds for it, then
    stops with exit 5 naming the cause (before, a process retried for ever and the scheduled run never ended: CI,
    stop 37). Nothing is stored twice; with Redis back, the next run stores the rest."""
    from servers import RedisServer

    redis_server = RedisServer(tmp_path / "redis")
    try:
        store_uri = postgres.create_database(f"dist_{uuid.uuid4().hex[:8]}")
        servers = (store_uri, redis_server.url, f"t{uuid.uuid4().hex[:8]}")
        with FaultSite(80, per_list=40, reprints=REPRINTS) as site:
            sites_file = site.write_sites(tmp_path)
            run_crawl(sites_file, tmp_path / "clean.sqlite")
            clean = partition(export(f"sqlite:///{tmp_path / 'clean.sqlite'}"))
            processes, texts = run_with_a_fault(site, sites_file, servers, tmp_path, redis_server.halt,
                                                "-s", "NEWSDEDUP_REDIS_GIVE_UP_AFTER=3")
            assert [process.returncode for process in processes] == [5, 5], [t[-3000:] for t in texts]
            for text in texts:
                assert "problem: Redis could not be reached for 3 s (NEWSDEDUP_REDIS_GIVE_UP_AFTER" in text
                assert stat(text, "newsdedup/redis/unreachable") == 1
                assert "'finish_reason': 'redis_unreachable'" in text
            check_consistent(site, store_uri, complete=False)
            redis_server.start_empty()
            rerun_logs = [tmp_path / "r1.log", tmp_path / "r2.log"]
            finish(start_workers(sites_file, servers, rerun_logs), rerun_logs)
            check_consistent(site, store_uri, complete=True)
            assert partition(export(store_uri)) == clean
    finally:
        redis_server.stop()


# 80 articles: 1-60 distinct stories, 61-80 reprints of 1-20 (even: exact, odd: near).
REPRINTS = {n: (n - 60, "exact" if n % 2 == 0 else "near") for n in range(61, 81)}


def story(path: str) -> int:
    n = int(path.rsplit("/", 1)[1].split(".")[0])
    return REPRINTS.get(n, (n, ""))[0]


def check_consistent(site: FaultSite, store_uri: str, *, complete: bool) -> None:
    """No URL recorded twice, no story stored as new twice, every reprint in its own story's cluster;
    ``complete``: every article page of the site is recorded."""
    found = outcomes(store_uri)
    assert all(len(where) == 1 for where in found.values()), {u: w for u, w in found.items() if len(w) > 1}
    if complete:
        assert sorted(found) == sorted(site.url(p) for p in site.article_paths)
    with psycopg.connect(store_uri) as conn:
        check_story_rows(conn, story)


def test_two_workers_hold_a_new_sites_first_pages_for_its_template_as_one_process_does(servers, tmp_path):
    # A portal whose pages have no headline to anchor on and a hot list (plain paragraphs) that outweighs each
    # article: read before the site's template knows the hot list, a page keeps it as its body, and the site's first
    # pages become exact repeats of one hot-list "story". One process holds a new site's first pages until its
    # template has seen MIN_PAGES pages, then reads them again (tests/test_site_templates.py). Here 2 processes share
    # 4 such pages, so one of them fetches fewer than MIN_PAGES: its template warms up on what the other's pages
    # taught it (newsdedup.distributed.shared_templates), and the run stores what one process stores.
    import redis

    from newsdedup.extract.template import MIN_PAGES
    from test_site_templates import BRIEFS, HOT, MORE, _page

    store_uri, redis_url, prefix = servers
    client = redis.Redis.from_url(redis_url)

    def both_joined() -> bool:
        return max((client.zcard(key) for key in client.scan_iter(f"{prefix}:run:*:workers")), default=0) >= 2

    def after_both_joined(count: int, path: str, site: FaultSite):
        wait_for(both_joined, 120)  # the list page, once both processes are in the run: both take article pages
        return None  # then served as usual

    stories = [(title, text + more) for (title, text), more in zip(BRIEFS[:4], MORE)]
    with FaultSite(0) as site:
        for n, (title, text) in enumerate(stories, start=1):
            site.set_page(f"/a/{n}.html", _page(title, text, anchored=False))
        site.faults["/list/1.html"] = after_both_joined
        # The first article page is held until a second one is asked for: with one request at a time a process, by
        # the other process, so both fetch article pages, however fast either is.
        site.hold_articles(until=site.articles_requested(2))
        sites_file = site.write_sites(tmp_path)
        logs = [tmp_path / "w1.log", tmp_path / "w2.log"]
        texts = finish(start_workers(sites_file, servers, logs, "-s", "NEWSDEDUP_EXTRACT_MIN_CHARS=100",
                                     "-s", "CONCURRENT_REQUESTS=1"), logs)
    fetched = sorted(stat(text, "newsdedup/crawl/article_pages") for text in texts)
    assert sum(fetched) == len(stories) and 0 < fetched[0] < MIN_PAGES, fetched  # one process alone: a cold template
    rows = export(store_uri)
    assert not [r for r in rows if HOT[0] in r["text"]]  # no page kept the hot list
    assert [r["status"] for r in rows] == ["unique"] * len(stories)  # no exact repeats of a hot-list "story"
    assert sorted(r["text"] for r in rows) == sorted(text for _, text in stories)
    assert all(r["text"] == dict(stories)[r["title"]] for r in rows)
    # Each process held the pages it fetched while the run's template was cold, and read every one of them again.
    held = [stat(text, "newsdedup/extract/template_warmup/held") for text in texts]
    assert MIN_PAGES <= sum(held) <= len(stories)
    assert [stat(text, "newsdedup/extract/template_warmup/reread") for text in texts] == held
