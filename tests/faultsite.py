"""A local news portal with injectable faults, and helpers to crawl it as users do.

:class:`FaultSite` serves, on 127.0.0.1 from a background thread, list pages and ``articles`` generated
article pages of our own invented text (distinct stories; optional exact and near reprints), plus whatever
faults a test sets per path: HTTP errors, empty or placeholder pages served once, redirect loops, over-size
bodies, a PDF behind ``text/html``, a page whose extraction never ends, slow responses; and article pages held
until the test lets them through (:meth:`FaultSite.hold_articles`), which orders a crawl's progress against the
test's steps by events, not by the clock. Every request is counted (``served``). :func:`crawl_command` and
:func:`run_crawl` run the real ``scrapy crawl portal`` in a subprocess from the project root, as users run it;
:func:`outcomes` reads back what the database recorded for every URL.
"""

from __future__ import annotations

import collections
import os
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from conftest import REPO_ROOT
from newsdedup.demo.server import LoopbackServer, Request, Response

# --- our own article text ---------------------------------------------------------------------------------
# Invented places, offices and things; sentences are random word sequences with function words between them, so
# two articles share almost no SpotSigs spots (templated sentences would share their fixed words and look alike).
_WORDS = (
    "东川市 西岭县 南湖区 北山镇 青河市 临江县 白石镇 云州市 海宁区 松原县 金城市 石桥镇 长风县 碧水市 安平区 "
    "交通局 教育局 农业农村局 卫生健康委员会 生态环境局 科技局 文化馆 气象台 住房保障中心 图书馆 供电公司 消防支队 "
    "市场监管局 水务集团 人民医院 公交线路 校舍 灌溉渠道 社区诊所 污水管网 孵化园 展览 暴雨 保障房 阅览室 农网 "
    "站点 抽检 管道 会诊 充电桩 电梯 客运 供暖 垃圾分类 居民 学生 农户 患者 商户 游客 司机 老人 家长 志愿者 "
    "工程师 教师 读者 村民 乘客 启动 完成 试点 推进 验收 扩建 升级 发布 开放 部署 改造 投用 检查 规划 调整 便利 "
    "安全 稳定 及时 透明 舒适 高效 实惠 清洁 可靠 资金 项目 方案 进度 意见 会议 调查 数据 标准 服务 设施 线路 "
    "网点 窗口 热线 平台 系统 设备 材料 工期 预算 补贴 名额 报名 培训 演练 巡查 维修 保养 监测 评估 公示 听证 "
    "今年 去年 上半年 年底 春节 汛期 冬季 夏季 周末 夜间 早高峰 上午 下午 近日 本周 下月"
).split()
_FUNCTION = "的 在 了 是 和 与 对 将 从 为 把 被 就 也 都 还 向 按".split()


def article_paragraphs(number: int, sentences: int = 12) -> list[str]:
    """Distinct, deterministic news-like text for article ``number`` (random but fixed by the number)."""
    rng = random.Random(number * 7919 + 13)
    paragraphs, current = [], []
    for _ in range(sentences):
        words = []
        for _ in range(rng.randint(7, 12)):
            words.append(rng.choice(_WORDS))
            if rng.random() < 0.5:
                words.append(rng.choice(_FUNCTION))
        words.insert(rng.randint(1, len(words) - 1), f"{rng.randint(2, 9000)}个")
        current.append("".join(words) + rng.choice("。。。！；"))
        if len(current) == 4:
            paragraphs.append("".join(current))
            current = []
    if current:
        paragraphs.append("".join(current))
    return paragraphs


def article_html(title: str, paragraphs: list[str], *, when: str = "2026-11-20 08:00") -> str:
    body = "\n".join(f"<p>{p}</p>" for p in paragraphs)
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>' + title + "_测试新闻网</title></head>\n"
        '<body><div class="nav"><a href="/list/1.html">滚动新闻</a> <a href="/about.html">关于我们</a></div>\n'
        f'<div class="article"><h1>{title}</h1><div class="info">{when} 来源：测试新闻网</div>\n{body}\n</div>\n'
        '<div class="footer">测试新闻网 版权所有</div></body></html>\n'
    )


#: Attributes of the one tag of :func:`hung_article_html`.
HUNG_ATTRIBUTES = 2_000_000


def hung_article_html(*, number: int = 0) -> bytes:
    """An article page whose extraction does not end, on any machine: a page that hangs, not a big one.

    Its last paragraph holds a ``<span>`` with :data:`HUNG_ATTRIBUTES` distinct attributes without values
    (``<span a0 a1 ... a1e847f>``). libxml2's HTML parser (2.14, in lxml's wheels) checks each attribute of a tag
    against every one before it for a duplicate, so parsing the tag costs n²/2 comparisons, all in C, without a return to
    Python. Measured through ``extract_article`` on an idle machine of 2026-11: 6 s for 50,000 attributes, 25 s for
    100,000; 2 million is 400 times 100,000's work: almost 3 hours, over 600 times the 15 s limit the tests set, and
    a quarter of an hour on a machine ten times faster. It is 15 MB: crawls of it need the BIG download settings of
    tests/test_faults.py.

    Not a bug of ours to fix (no real page carries such a tag; the time limit is the answer to it), used as what these
    tests need: a real input on the real worker path that never finishes. If a libxml2 release checks duplicates
    with a hash, the tests that use this page fail with the page stored, and need another such input.
    (Until 2026-11 this was a run of en spaces that the extractor's own line folding read in quadratic time; that
    is linear now.)
    """
    names = " ".join(f"a{i:x}" for i in range(HUNG_ATTRIBUTES))
    paragraphs = [*article_paragraphs(number), f"<span {names}>开始</span>结束。"]
    return article_html(f"长文{number}", paragraphs).encode("utf-8")


# --- faults -----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Reply(Response):
    delay: float = 0.0  # seconds before it is sent


# (times served before, request path, the site) -> a reply, or None to serve the page normally
Fault = Callable[[int, str, "FaultSite"], "Reply | None"]


def status(code: int, *, times: int | None = None) -> Fault:
    """Answer with HTTP ``code`` (the first ``times`` requests, or always)."""
    page = f"<html><body><h1>{code}</h1></body></html>".encode()
    return lambda n, path, site: Reply(page, status=code) if times is None or n < times else None


def body_once(body: bytes, content_type: str = "text/html; charset=utf-8", *, times: int = 1) -> Fault:
    """Serve ``body`` instead of the article the first ``times`` requests (empty page, placeholder...)."""
    return lambda n, path, site: Reply(body, content_type) if n < times else None


def always(body: bytes, content_type: str = "text/html; charset=utf-8") -> Fault:
    return lambda n, path, site: Reply(body, content_type)


def redirect_loop() -> Fault:
    return lambda n, path, site: Reply(b"", status=302, headers=(("Location", f"{path.split('?')[0]}?hop={n + 1}"),))


#: The longest an article page waits for its gate (:meth:`FaultSite.hold_articles`): a test that never opens it fails
#: instead of hanging. Longer than any wait of the tests that hold pages (120 s); a crawl's own request gives up
#: sooner (newsdedup's DOWNLOAD_TIMEOUT, 30 s, then retried), so a test opens its gate within seconds of its step.
HOLD_TIMEOUT = 150.0


@dataclass(frozen=True)
class _Gate:
    beyond: int  # article requests (counted since the site started) let through before it holds
    until: threading.Event
    timeout: float


PLACEHOLDER = article_html("稿件审核中", ["稿件审核中，请稍后访问。"]).encode("utf-8")
PDF = b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Type /Catalog >>\nendobj\n" + b"0" * 4000 + b"\n%%EOF\n"


class FaultSite(LoopbackServer):
    """A news portal on 127.0.0.1: ``/list/<k>.html`` pages linking ``articles`` pages ``/a/<n>.html``.

    ``reprints`` maps an article number to ``(original number, "exact" | "near")``: an exact reprint has the
    original's text, a near one the original's text with one sentence added. ``article_delay`` serves every article
    page that many seconds late: a rate, for tests whose random moments must land mid-crawl; a test that needs the
    crawl still running at one of its steps holds pages until then (:meth:`hold_articles`) instead.
    """

    def __init__(self, articles: int = 30, *, per_list: int = 25, reprints: dict[int, tuple[int, str]] | None = None,
                 article_delay: float = 0.0) -> None:
        self.articles = articles
        self.per_list = per_list
        self.reprints = reprints or {}
        self.article_delay = article_delay
        self.faults: dict[str, Fault] = {}
        self.extra_links: list[str] = []  # more article paths to list (fault pages outside 1..articles)
        self.link_path = "/a/{n}.html"  # what list pages link to (tests change the layout)
        self._cache: dict[str, bytes] = {}
        self._article_requests = 0  # requests for article pages (/a/...) so far
        self._gate: _Gate | None = None
        self._counted: list[tuple[int, threading.Event]] = []  # (article requests, set once that many arrived)
        self.held_too_long: list[str] = []  # article pages served because their gate stayed shut too long
        super().__init__(self.page)

    @property
    def served(self) -> collections.Counter[str]:
        """Requests received per path (query dropped)."""
        return self.requests_served

    def hold_articles(self, *, after: int = 0, until: threading.Event,
                      timeout: float = HOLD_TIMEOUT) -> threading.Event:
        """Hold every article page (``/a/...``) requested after the next ``after`` article requests until ``until`` is
        set; then it is served as usual (faults included). Returns ``until``.

        A page is held in its request's own server thread (one thread a connection, and a crawl has one connection
        a request in flight), so the crawl cannot fetch more than ``after`` more article pages (retries included)
        before the test's step, however fast the machine, while other requests are served. ``until`` may be a test's
        event (set after a kill, say, and again in a ``finally``) or :meth:`articles_requested`'s (a barrier). The
        wait is bounded: after ``timeout`` seconds the page is served anyway and named in ``held_too_long``, and the
        site raises when the ``with`` block ends; stopping the site sets ``until``, so no thread stays held. One
        gate a site: a second call replaces the first.
        """
        with self._lock:
            self._gate = _Gate(self._article_requests + after, until, timeout)
        return until

    def articles_requested(self, n: int) -> threading.Event:
        """An event set once ``n`` more article pages (``/a/...``) have been requested (held ones included)."""
        event = threading.Event()
        with self._lock:
            self._counted.append((self._article_requests + n, event))
        return event

    def _hold(self, path: str) -> None:
        """Count an article request and wait at the gate, if one holds it."""
        with self._lock:
            self._article_requests += 1
            number, gate = self._article_requests, self._gate
            for wanted, event in self._counted:
                if number >= wanted:
                    event.set()
        if gate is not None and number > gate.beyond and not gate.until.wait(gate.timeout):
            with self._lock:
                self.held_too_long.append(path)

    def stop(self) -> None:
        """Let held article pages go (their gate's event set), then stop serving."""
        with self._lock:
            gate = self._gate
        if gate is not None:
            gate.until.set()
        super().stop()

    def __exit__(self, exc_type, *exc_info: object) -> None:
        self.stop()
        if exc_type is None and self.held_too_long:
            raise AssertionError(f"article pages served when their gate's timeout ran out, the gate never opened "
                                 f"(hold_articles): {self.held_too_long}")

    def respond(self, request: Request) -> Response | None:
        if request.path.startswith("/a/"):
            self._hold(request.path)
        with self._lock:
            fault = self.faults.get(request.path)
        reply = fault(request.seen, request.target, self) if fault is not None else None
        if reply is None:
            reply = super().respond(request)  # the page as usual
        if isinstance(reply, Reply) and reply.delay:
            time.sleep(reply.delay)
        return reply

    def url(self, path: str) -> str:
        return self.base_url + path

    @property
    def article_paths(self) -> list[str]:
        return [f"/a/{n}.html" for n in range(1, self.articles + 1)] + list(self.extra_links)

    def sites_toml(self, *, name: str = "fault", article_url_pattern: str | None = None) -> str:
        escaped = self.base_url.replace(".", r"\.")
        pattern = article_url_pattern or escaped + r"/a/\d+\.html"
        return (
            f'[[site]]\nname = "{name}"\nstart_urls = ["{self.base_url}/list/1.html"]\n'
            f'allowed_domains = ["127.0.0.1"]\narticle_url_pattern = \'{pattern}\'\n'
            f"follow_url_pattern = '{escaped}/list/\\d+\\.html'\n"
        )

    def write_sites(self, directory: Path, **kwargs) -> Path:
        path = directory / "sites.toml"
        path.write_text(self.sites_toml(**kwargs), encoding="utf-8")
        return path

    # -- content
    def paragraphs(self, number: int) -> list[str]:
        if number in self.reprints:
            original, kind = self.reprints[number]
            paragraphs = article_paragraphs(original)
            if kind == "near":  # a reprint that adds an editor's sentence
                paragraphs = [*paragraphs[:-1], paragraphs[-1] + article_paragraphs(10_000 + number, sentences=1)[0]]
            return paragraphs
        return article_paragraphs(number)

    def page(self, path: str) -> Reply | None:
        if path == "/robots.txt":
            return Reply(b"User-agent: *\nAllow: /\n", "text/plain")
        if path.startswith("/list/") and path.endswith(".html"):
            try:
                k = int(path[len("/list/"):-len(".html")])
            except ValueError:
                return None
            return self._list(k)
        if path in self._cache:
            return Reply(self._cache[path], delay=self.article_delay)
        if path.startswith("/a/") and path.endswith(".html"):
            try:
                n = int(path[len("/a/"):-len(".html")])
            except ValueError:
                return None
            if 1 <= n <= self.articles or path in self.extra_links:
                html = article_html(f"第{n}号新闻：{_WORDS[n % len(_WORDS)]}进展", self.paragraphs(n))
                return Reply(html.encode("utf-8"), delay=self.article_delay)
        return None

    def set_page(self, path: str, body: bytes) -> None:
        """Serve ``body`` at ``path`` (a generated big page, say) and list it on the list pages."""
        self._cache[path] = body
        if path not in self.article_paths:
            self.extra_links.append(path)

    def _list(self, k: int) -> Reply | None:
        paths = self.article_paths
        chunk = paths[(k - 1) * self.per_list:k * self.per_list]
        if k < 1 or (not chunk and k > 1):
            return None
        links = "\n".join(
            f'<li><a href="{self.link_path.format(n=p[len("/a/"):-len(".html")])}">新闻 {p}</a></li>' for p in chunk
        )
        more = f'<a href="/list/{k + 1}.html">下一页</a>' if k * self.per_list < len(paths) else ""
        html = (f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>滚动新闻 第{k}页</title></head>'
                f'<body><a href="/about.html">关于我们</a><ul>\n{links}\n</ul>{more}</body></html>')
        return Reply(html.encode("utf-8"))


# --- crawling ---------------------------------------------------------------------------------------------
FAST = ("-s", "DOWNLOAD_DELAY=0", "-s", "AUTOTHROTTLE_ENABLED=False", "-s", "TELNETCONSOLE_ENABLED=False",
        "-s", "CONCURRENT_REQUESTS_PER_DOMAIN=8", "-s", "LOG_LEVEL=INFO")


def storage_uri(db) -> str:
    """``db`` is a SQLite file's path or a ``postgresql://`` URI (the fault tests run on both stores)."""
    return db if is_postgres(db) else f"sqlite:///{db}"


def is_postgres(db) -> bool:
    return isinstance(db, str) and db.startswith("postgresql://")


def crawl_command(sites_file, db, *extra: str, workers: int = 1) -> list[str]:
    return [
        sys.executable, "-m", "scrapy", "crawl", "portal", "--sites", str(sites_file),
        "-s", f"NEWSDEDUP_STORAGE_URI={storage_uri(db)}", "-s", f"NEWSDEDUP_WORKERS={workers}", *FAST, *extra,
    ]


def run_crawl(sites_file, db, *extra: str, workers: int = 1, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run(crawl_command(sites_file, db, *extra, workers=workers), cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=timeout)


def start_crawl(sites_file, db, *extra: str, workers: int = 1, log: Path | None = None,
                **popen: object) -> subprocess.Popen:
    out = open(log, "w", encoding="utf-8") if log is not None else subprocess.DEVNULL
    return subprocess.Popen(crawl_command(sites_file, db, *extra, workers=workers), cwd=REPO_ROOT,
                            stdout=out, stderr=subprocess.STDOUT, **popen)


def outcomes(db) -> dict[str, list[tuple[str, str]]]:
    """Every URL the database recorded, with each (table, status/reason/kind) it is in."""
    found: dict[str, list[tuple[str, str]]] = collections.defaultdict(list)
    for table, column in (("articles", "status"), ("repeats", "'exact_duplicate'"), ("skipped", "reason"),
                          ("failures", "kind")):
        try:
            for url, what in rows(db, f"SELECT url, {column} FROM {table}"):
                found[url].append((table, what))
        except _MissingTable:  # killed before the schema was written
            return {}
    return dict(found)


class _MissingTable(Exception):
    """The database or the table is not there yet."""


def rows(db, query: str, *args) -> list[tuple]:
    """The rows of ``query`` (``?`` placeholders) in the SQLite file or PostgreSQL database ``db``, read with the
    database's own client, not through newsdedup."""
    if is_postgres(db):
        import psycopg

        with psycopg.connect(db, autocommit=True) as conn:
            try:
                return conn.execute(query.replace("?", "%s"), args).fetchall()
            except psycopg.errors.UndefinedTable as exc:
                raise _MissingTable(str(exc)) from None
    if not Path(db).exists():
        raise _MissingTable(str(db))
    with sqlite3.connect(db) as conn:
        try:
            return conn.execute(query, args).fetchall()
        except sqlite3.OperationalError as exc:
            if "no such table" not in str(exc):
                raise
            raise _MissingTable(str(exc)) from None


def count(db, table: str) -> int:
    """Rows in ``table`` now, 0 while the crawl has not created the database yet."""
    try:
        return rows(db, f"SELECT COUNT(*) FROM {table}")[0][0]
    except _MissingTable:
        return 0


def assert_all_recorded(site: FaultSite, db, expected: dict[str, tuple[str, str]] | None = None) -> dict:
    """Every article page of the site is in exactly one table; ``expected`` pins some paths' outcome."""
    found = outcomes(db)
    for path in site.article_paths:
        url = site.url(path)
        assert len(found.get(url, [])) == 1, (path, found.get(url))
    for path, outcome in (expected or {}).items():
        assert found[site.url(path)] == [outcome], (path, found[site.url(path)])
    return found


def clusters(db) -> set[frozenset[str]]:
    """The stored articles partitioned by cluster, by URL (cluster numbers differ between two crawls; the
    partition does not), with each exact repeat in its original's cluster."""
    members: dict[str, set[str]] = collections.defaultdict(set)
    cluster_of = {}
    for url, cluster in rows(db, "SELECT url, cluster_id FROM articles"):
        key = str(cluster) if cluster is not None else url
        members[key].add(url)
        cluster_of[url] = key
    for url, original in rows(db, "SELECT url, repeat_of FROM repeats"):
        members[cluster_of.get(original, original)].add(url)
    return {frozenset(group) for group in members.values()}


# --- processes --------------------------------------------------------------------------------------------
def children(pid: int) -> list[int]:
    """Child processes of ``pid``, started by any of its threads (pebble starts replacement workers from one)."""
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(p) for p in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


def worker_pids(crawl_pid: int) -> list[int]:
    """The extraction workers of a crawl process (spawned Python processes, not the resource tracker)."""
    found = []
    for pid in children(crawl_pid):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        if b"spawn_main" in cmdline and b"resource_tracker" not in cmdline:
            found.append(pid)
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def cpu_seconds(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def busy_worker(crawl_pid: int, *, window: float = 1.0, min_total: float = 0.0, min_used: float = 0.2) -> int | None:
    """The crawl's worker that used the most CPU over ``window`` seconds (at least ``min_used`` seconds of it, and at
    least ``min_total`` seconds in all), or None."""
    before = {pid: cpu_seconds(pid) for pid in worker_pids(crawl_pid)}
    time.sleep(window)
    used = {pid: cpu_seconds(pid) - seconds for pid, seconds in before.items() if alive(pid)}
    if not used:
        return None
    pid = max(used, key=used.get)
    return pid if used[pid] >= min_used and cpu_seconds(pid) >= min_total else None


def wait_for(condition: Callable[[], object], timeout: float, interval: float = 0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"condition not met within {timeout} s")


def kill(pid: int, sig: int = signal.SIGKILL) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass
