"""What crosses Redis in a distributed crawl is data: a pickle someone writes there runs nothing.

Real Redis, PostgreSQL and ``scrapy crawl portal`` processes (as tests/test_distributed.py), a local demo portal.
"""

from __future__ import annotations

import pickle
import uuid
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import urlsplit

import scrapy
from scrapy.utils.request import request_from_dict

from faultsite import kill, wait_for
from server_fixtures import postgres, redis_server  # noqa: F401 - fixtures
from test_distributed import export, finish, servers, start_workers, stat  # noqa: F401 - servers: a fixture
from newsdedup import wire
from newsdedup.demo.content import load_manifest
from newsdedup.demo.server import DemoPortalServer
from newsdedup.dupefilter import ARTICLE_META_KEY, SITE_META_KEY
from newsdedup.spiders.portal import LISTED_META_KEY


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
    client.set(f"{prefix}:run", run_id, px=120_000)
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
            [text] = finish(processes, logs)
        finally:
            kill(processes[0].pid)

    assert f"run {run_id}" in text  # the worker joined the run whose queue held the pickle
    assert stat(text, "newsdedup/redis/undecodable") == 2
    assert "dropped a queued request that is not one of ours" in text
    assert "dropped stream entry" in text
    assert "2 stream entr(ies) or queued request(s) in Redis were not data" in text  # the closing WARNING
    assert client.xlen(f"{prefix}:results") == 0  # acknowledged and deleted: no writer reads it again
    rows = export(store_uri)
    assert {urlsplit(r["url"]).path for r in rows} == set(manifest["by_day"][1]["new_article_pages"])
    pickle.loads(payload)  # the payload does run code when unpickled: the assertion above means something
    assert marker.exists()


def wire_client(url: str):
    from newsdedup.distributed import connect

    return connect(url)
