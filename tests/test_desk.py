"""The monitoring desk (``newsdedup serve``, issue 35) over stores made by real crawls of a local portal, on SQLite
and on PostgreSQL: its pages and their JSON (Starlette's test client), search on both stores giving the same
results, the search index's migration, read-only access, the token, hostile stored values, bad parameters.

The portal (tests/local_site.py): ``alpha`` breaks a story that ``beta`` reprints verbatim and ``gamma`` edits (a
near copy); ``alpha`` breaks a weather story that ``beta`` reprints; ``gamma`` publishes a story whose title and
body carry markup and script (as text: what a hostile or broken portal can put in an article), which ``alpha``
reprints; ``beta`` publishes a commentary quoting three paragraphs of ``alpha``'s metro report. Two runs: the
originals, then the copies. The texts are invented for these tests.
"""

from __future__ import annotations

import base64
import html
import sqlite3
import subprocess
import sys

import markupsafe
import pytest

pytest.importorskip("starlette")
from starlette.testclient import TestClient  # noqa: E402

from conftest import REPO_ROOT  # noqa: E402
from local_site import OTHER_STORY, STORY, LocalSite, crawl, edited  # noqa: E402
from server_fixtures import postgres, store_uri  # noqa: E402, F401 - fixtures
from test_reuse_crawl import COMMENTARY, QUOTED, REPORT  # noqa: E402

from newsdedup.serve.app import create_app, safe_url  # noqa: E402
from newsdedup.serve.store import open_readonly  # noqa: E402
from newsdedup.storage import StoreError, open_store  # noqa: E402
from newsdedup.storage.sql import SCHEMA_VERSION  # noqa: E402

# Markup in a stored title and body (the page escapes it as text: the extractor gives it back as characters).
HOSTILE_TITLE = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">港口通报'
HOSTILE_BODY = [
    "南岭港务集团今天通报，港区三号泊位改造工程已完成主体施工，预计下月起恢复集装箱装卸作业，年吞吐能力将有所提升。",
    '通报称 <script>window.__pwned=3</script> 施工期间港区实行分时段通行，<a href="javascript:window.__pwned=4">详情</a> 请关注公告。',
    "港务集团负责人表示，改造后的泊位配备了新型岸桥和自动化堆场设备，作业效率预计提高三成，船舶等待时间明显缩短。",
    '附件 <img src=x onerror="window.__pwned=5"> javascript:alert(1) data:text/html,<b>x</b> 以上内容以正式文件为准。',
]
WEATHER_TITLE = "南岭省本周后期明显降温"
CANTEEN_TITLE = "临江市推行社区食堂建设"
METRO_TITLE = "青川地铁二号线今天开通"
COMMENTARY_TITLE = "地铁开通之后还要做什么"


def _escaped(text: str) -> str:
    """``text`` as an article page carries it: characters, not markup."""
    return html.escape(text, quote=False)


def utf8_database(server, name: str) -> str:
    """A new database whose locale classifies Chinese characters as letters (pg_trgm indexes only letters)."""
    import psycopg

    with psycopg.connect(server.admin_uri, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name} TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE 'C.UTF-8' "
                     "LC_CTYPE 'C.UTF-8'")
    return server.admin_uri.rsplit("/", 1)[0] + "/" + name


TABLES = ("articles", "repeats", "skipped", "failures", "site_runs", "clusters", "reuses")


def copy_to_postgres(sqlite_path, uri: str) -> None:
    """Every row of the crawled SQLite store into a new PostgreSQL store (its schema made by open_store; the search
    indexes filled by PostgreSQL as the rows arrive): the two stores hold the same data.

    A crawl straight into PostgreSQL is what the users run; here the same rows make the comparison exact (which
    copy of a story a crawl stores first depends on timing)."""
    import psycopg

    with open_store(uri):
        pass
    source = sqlite3.connect(sqlite_path)
    with psycopg.connect(uri) as conn:
        for table in TABLES:
            cursor = source.execute(f"SELECT * FROM {table}")
            columns = [d[0] for d in cursor.description]
            rows = cursor.fetchall()
            if rows:
                with conn.cursor() as out:
                    out.executemany(f"INSERT INTO {table} ({', '.join(columns)}) VALUES "
                                    f"({', '.join('%s' for _ in columns)})", rows)
    source.close()


@pytest.fixture(scope="module")
def portal_stores(tmp_path_factory, request):
    """{"sqlite": URI, "postgresql": URI}: two runs of the portal crawled into SQLite, the same rows in PostgreSQL."""
    tmp = tmp_path_factory.mktemp("desk")
    db = tmp / "desk.sqlite"
    sites_file = tmp / "sites.toml"
    with LocalSite(("alpha", "beta", "gamma")) as site:
        site.publish("alpha", 1, CANTEEN_TITLE, STORY, "2026-11-27 08:00")
        site.publish("alpha", 2, WEATHER_TITLE, OTHER_STORY, "2026-11-27 09:00")
        site.publish("alpha", 3, METRO_TITLE, REPORT, "2026-11-27 10:00")
        site.publish("gamma", 1, _escaped(HOSTILE_TITLE), [_escaped(p) for p in HOSTILE_BODY], "2026-11-27 11:00")
        sites_file.write_text(site.sites_toml(("alpha", "gamma")), encoding="utf-8")
        crawl(sites_file, db)
        site.publish("beta", 1, CANTEEN_TITLE, STORY, "2026-11-27 12:00")
        site.publish("gamma", 2, "社区食堂覆盖全市 老人就餐更方便", edited(STORY), "2026-11-27 13:00")
        site.publish("beta", 2, WEATHER_TITLE, OTHER_STORY, "2026-11-27 12:30")
        site.publish("alpha", 4, _escaped(HOSTILE_TITLE), [_escaped(p) for p in HOSTILE_BODY], "2026-11-27 14:00")
        site.publish("beta", 3, COMMENTARY_TITLE, COMMENTARY, "2026-11-28 08:00")
        sites_file.write_text(site.sites_toml(), encoding="utf-8")
        crawl(sites_file, db)
    uris = {"sqlite": f"sqlite:///{db}", "postgresql": utf8_database(request.getfixturevalue("postgres"), "desk_portal")}
    copy_to_postgres(db, uris["postgresql"])
    return uris


@pytest.fixture(params=["sqlite", "postgresql"])
def desk(request, portal_stores):
    """A test client of the desk over one store, read-only."""
    store = open_readonly(portal_stores[request.param])
    with TestClient(create_app(store)) as client:
        client.store = store
        yield client
    store.close()


def story_id(client, title: str) -> int:
    return next(s["cluster_id"] for s in client.get("/api/now").json()["stories"] if s["title"] == title)


# -- Now ---------------------------------------------------------------------------------------------------
def test_now_ranks_the_spreading_stories_by_sites_then_copies(desk):
    data = desk.get("/api/now").json()
    rows = [(s["title"], s["origin"]["site"], s["site_count"], s["copies"]) for s in data["stories"]]
    assert rows[0] == (CANTEEN_TITLE, "alpha", 3, 2)
    assert sorted(rows[1:]) == sorted([(WEATHER_TITLE, "alpha", 2, 1), (HOSTILE_TITLE, "gamma", 2, 1)])
    canteen = data["stories"][0]
    assert canteen["last_copy"]["site"] == "gamma" and canteen["last_copy"]["kind"] == "near"
    assert canteen["origin"]["dated_at"] == "2026-11-27T00:00:00+00:00"
    assert canteen["copies_per_hour"] == 2 / 5  # two copies from 08:00 to 13:00
    assert data["last_run_finished_at"] == desk.get("/api/runs/latest").json()["last_run_finished_at"]
    page = desk.get("/")
    assert page.status_code == 200 and CANTEEN_TITLE in page.text and f'href="/story/{canteen["cluster_id"]}"' in page.text


def test_now_filters_by_site_minimum_sites_and_query(desk):
    titles = lambda **params: {s["title"] for s in desk.get("/api/now", params=params).json()["stories"]}  # noqa: E731
    assert titles(min_sites=3) == {CANTEEN_TITLE}
    assert titles(site="beta") == {CANTEEN_TITLE, WEATHER_TITLE}
    assert titles(q="冷空气") == {WEATHER_TITLE}
    assert titles(q="食堂") == {CANTEEN_TITLE}  # two characters: below a trigram, still found
    assert titles(window="1000d") == titles()


# -- Story ---------------------------------------------------------------------------------------------------
def test_a_story_shows_every_copy_how_it_matched_and_what_the_near_copy_changed(desk):
    cluster_id = story_id(desk, CANTEEN_TITLE)
    data = desk.get(f"/api/story/{cluster_id}").json()
    assert data["origin"]["site"] == "alpha" and data["origin"]["url"].endswith("/alpha/news/1.html")
    copies = {c["site"]: c for c in data["copies"]}
    assert copies["beta"]["kind"] == "exact" and copies["beta"]["diff"] is None
    near = copies["gamma"]
    assert near["kind"] == "near" and 0 < near["similarity"] < 1 and near["method"]
    assert near["minutes_after_origin"] == 300
    assert near["diff"]["summary"] == {"kept": len(STORY) - 1, "added": 1, "cut": 0, "edited": 1}
    [edit] = [row for row in near["diff"]["rows"] if row["op"] == "replace"]
    assert edit["origin"] == STORY[2] and edit["copy"] == edited(STORY)[2]
    [added] = [row for row in near["diff"]["rows"] if row["op"] == "insert"]
    assert added["copy"] == edited(STORY)[-1]
    assert [p["site"] for p in data["timeline"]] == ["alpha", "beta", "gamma"] and data["timeline"][0]["x"] == 0
    page = desk.get(f"/story/{cluster_id}").text
    assert "What gamma changed" in page and '<tr class="replace">' in page and "<mark>" in page


def test_a_story_shows_the_passages_quoted_from_it_and_the_quoting_story_those_it_quotes(desk):
    hits = desk.get("/api/search", params={"q": "二号线"}).json()["stories"]
    by_title = {s["title"]: s["cluster_id"] for s in hits}
    report = desk.get(f"/api/story/{by_title[METRO_TITLE]}").json()
    [quote] = report["quoted_by"]
    assert quote["site"] == "beta" and quote["title"] == COMMENTARY_TITLE
    taken = "".join("".join(p["text"].split()) for p in quote["passages"])
    assert "".join("".join(QUOTED).split()) in taken
    commentary = desk.get(f"/api/story/{by_title[COMMENTARY_TITLE]}").json()
    assert commentary["quoted_by"] == [] and [s["cluster_id"] for s in commentary["quotes"]] == [by_title[METRO_TITLE]]
    page = desk.get(f"/story/{by_title[METRO_TITLE]}").text
    assert "Quoted by" in page and html.escape(QUOTED[0][:20]) in page


# -- Sites ---------------------------------------------------------------------------------------------------
def test_sites_give_each_sites_record_and_crawl_health(desk):
    rows = {row["site"]: row for row in desk.get("/api/sites").json()["sites"]}
    assert set(rows) == {"alpha", "beta", "gamma"}
    assert (rows["alpha"]["originals"], rows["alpha"]["copies_made"]) == (2, 1)
    assert (rows["beta"]["originals"], rows["beta"]["copies_made"]) == (0, 2)
    assert rows["beta"]["copies_most_from"] == {"site": "alpha", "copies": 2}
    assert rows["beta"]["median_delay_minutes"] == (240 + 210) / 2
    assert rows["alpha"]["health"]["runs"] == 2 and rows["beta"]["health"]["runs"] == 1
    assert rows["alpha"]["health"]["last_exit_code"] == 0
    site = desk.get("/api/sites/beta").json()
    assert {s["title"] for s in site["stories_copied"]} == {CANTEEN_TITLE, WEATHER_TITLE}
    assert site["stories_broken"] == [] and len(site["site"]["last_runs"]) == 1
    assert desk.get("/sites/alpha").status_code == 200
    assert desk.get("/api/sites/nosuch").status_code == 404


# -- Search --------------------------------------------------------------------------------------------------
def _search(client, **params) -> list[tuple]:
    data = client.get("/api/search", params=params).json()
    return [(s["title"], s["copies"], sorted(m["url"].split("/", 3)[3] for m in s["matches"])) for s in data["stories"]]


# Words of 1, 2 and 3+ characters, a word only at the very end of a title (通报), ASCII in any case, several words.
@pytest.mark.parametrize("query", ["社区食堂", "食堂", "食堂 补贴", "SCRIPT", "Sc", "港", "通报", "冷空气 大风",
                                   "javascript:alert", "二号线",
                                   "不存在的词语组合"])
def test_search_gives_the_same_results_on_both_stores(portal_stores, query):
    results = {}
    for name, uri in portal_stores.items():
        store = open_readonly(uri)
        with TestClient(create_app(store)) as client:
            results[name] = (_search(client, q=query), _search(client, q=query, order="copies"),
                             client.get("/api/search", params={"q": query}).json()["over_time"])
        store.close()
    assert results["sqlite"] == results["postgresql"]


def test_postgresql_searches_chinese_words_through_the_trigram_index(portal_stores):
    import psycopg

    with psycopg.connect(portal_stores["postgresql"], autocommit=True) as conn:
        conn.execute("SET enable_seqscan = off")  # a table this small is read whole otherwise
        plan = "\n".join(row[0] for row in conn.execute(
            "EXPLAIN SELECT id FROM articles a WHERE a.title ILIKE '%社区食堂%' OR a.text ILIKE '%社区食堂%'"))
    assert "articles_title_trgm" in plan and "articles_text_trgm" in plan, plan


def test_search_groups_matches_by_story_with_highlighted_snippets_and_counts_them_per_day_and_site(desk):
    data = desk.get("/api/search", params={"q": "社区食堂", "order": "copies"}).json()
    [canteen] = [s for s in data["stories"] if s["title"] == CANTEEN_TITLE]
    assert canteen["copies"] == 2 and data["stories"][0] is not None
    sites = {m["site"] for m in canteen["matches"]}
    assert "alpha" in sites and "gamma" in sites  # the exact reprint is a repeat of alpha's text
    assert all(any(marked and piece == "社区食堂" for piece, marked in m["snippet"]) for m in canteen["matches"])
    assert data["over_time"]["sites"]["alpha"] and sum(sum(v) for v in data["over_time"]["sites"].values()) == data["matches"]
    assert _search(desk, q="食堂", site="gamma") == [(CANTEEN_TITLE, 2, ["gamma/news/2.html"])]
    page = desk.get("/search", params={"q": "社区食堂"}).text
    assert "<mark>社区食堂</mark>" in page and 'id="chart"' in page


# -- security ----------------------------------------------------------------------------------------------
def test_hostile_stored_values_are_escaped_and_never_links(desk):
    cluster_id = story_id(desk, HOSTILE_TITLE)
    pages = [desk.get("/").text, desk.get(f"/story/{cluster_id}").text,
             desk.get("/search", params={"q": "港务集团"}).text, desk.get("/sites/gamma").text]
    for page in pages:
        assert "<script>window" not in page and "<img src=x" not in page and 'href="javascript:' not in page
        assert "onerror=" not in page.replace("onerror=&#34;", "").replace("onerror=&quot;", "")
    assert str(markupsafe.escape(HOSTILE_TITLE)) in pages[1]  # shown as the text it is
    for response in (desk.get("/"), desk.get("/api/now"), desk.get("/static/desk.js")):
        csp = response.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "unsafe-inline" not in csp
    assert safe_url("javascript:alert(1)") is None and safe_url("data:text/html,x") is None
    assert safe_url("http://a.example/x") == "http://a.example/x"


@pytest.mark.parametrize("path", [
    "/?window=soon", "/?window=0s", "/?min_sites=two", "/?min_sites=0", "/story/abc", "/story/99999999999999999999",
    "/search?q=" + "长" * 201, "/search?q=a%00b", "/search?q=x&order=best", "/sites?window=-1d", "/search?q=x&window=zz",
    "/?window=99999999999999999999d", "/?window=nan", "/?min_sites=99999999999999999999999", "/story/%FF",
])
def test_a_bad_parameter_is_a_400_with_a_message(desk, path):
    page = desk.get(path)
    assert page.status_code == 400 and '<p class="error">' in page.text
    api = desk.get("/api" + (path if not path.startswith("/?") else "/now" + path[1:]))
    assert api.status_code == 400 and api.json()["error"]


def test_unknown_pages_are_404(desk):
    assert desk.get("/story/123456789").status_code == 404
    assert desk.get("/api/story/123456789").json() == {"error": "not found: /api/story/123456789"}
    assert desk.get("/nothing").status_code == 404


def test_with_a_token_a_request_without_it_gets_401(portal_stores):
    store = open_readonly(portal_stores["sqlite"])
    with TestClient(create_app(store, token="s3cret")) as client:
        assert client.get("/").status_code == 401 and client.get("/api/now").status_code == 401
        assert client.get("/", headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert client.get("/api/now", headers={"Authorization": "Bearer s3cret"}).status_code == 200
        basic = base64.b64encode(b"desk:s3cret").decode()
        assert client.get("/", headers={"Authorization": f"Basic {basic}"}).status_code == 200
        assert client.get("/static/desk.js").status_code == 401
    store.close()


def test_serve_on_another_address_without_a_token_exits_2_with_one_line(portal_stores):
    result = subprocess.run([sys.executable, "-m", "newsdedup.cli", "serve", "--storage", portal_stores["sqlite"],
                             "--host", "0.0.0.0"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60,
                            env={"PATH": "/usr/bin:/bin"})
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "--token" in result.stderr


def test_serve_refuses_a_missing_database_in_one_line(tmp_path):
    result = subprocess.run([sys.executable, "-m", "newsdedup.cli", "serve", "--storage",
                             f"sqlite:///{tmp_path / 'none.sqlite'}"], cwd=REPO_ROOT, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "no database at" in result.stderr
    assert not (tmp_path / "none.sqlite").exists()


def test_the_desk_reads_the_store_and_cannot_write_it(desk):
    with pytest.raises(Exception, match="(?i)read-?only"):
        desk.store._read("INSERT INTO meta (key, value) VALUES ('desk', 'wrote')")
    with pytest.raises(StoreError, match="read-only"):
        with desk.store._write():
            pass


# -- watches ------------------------------------------------------------------------------------------------
def _csrf(page: str) -> str:
    import re

    return re.search(r'name="csrf" value="([0-9a-f]+)"', page).group(1)


def test_watches_are_listed_and_one_is_added_from_the_form_of_the_page(portal_stores, tmp_path):
    watches = tmp_path / "watches.toml"
    store = open_readonly(portal_stores["sqlite"])
    form = {"name": "canteens <b>", "query": "社区  食堂", "sites": "alpha, gamma", "min_sites": "2", "min_copies": "",
            "window": "7d", "notify": "json://127.0.0.1:9/hook?token=secret"}
    with TestClient(create_app(store, watches=watches)) as client:
        assert client.get("/api/watches").json()["watches"] == []
        csrf = _csrf(client.get("/watches").text)
        assert client.post("/watches", data={**form, "csrf": "0" * 64}).status_code == 403
        assert client.post("/watches", data={**form, "csrf": csrf},
                           headers={"Origin": "http://evil.example"}).status_code == 403
        assert client.post("/watches", data={**form, "csrf": csrf, "min_sites": "0"}).status_code == 400
        assert client.post("/watches", data={**form, "csrf": csrf, "notify": ""}).status_code == 400
        assert not watches.exists()
        created = client.post("/watches", data={**form, "csrf": csrf}, follow_redirects=False)
        assert created.status_code == 303 and created.headers["location"] == "/watches"
        assert client.post("/watches", data={**form, "csrf": csrf}).status_code == 400  # the same name again
        [watch] = client.get("/api/watches").json()["watches"]
        assert watch == {"name": "canteens <b>", "query": "社区 食堂", "sites": ["alpha", "gamma"], "min_sites": 2,
                         "min_copies": 0, "window_hours": 168.0, "notify": ["json://…"], "alerts": {}}
        page = client.get("/watches").text
        assert "canteens &lt;b&gt;" in page and "secret" not in page
    store.close()
    from newsdedup.monitoring.alerts import load_watches

    [loaded] = load_watches(watches)
    assert (loaded.name, loaded.notify, loaded.sites) == ("canteens <b>", ("json://127.0.0.1:9/hook?token=secret",),
                                                          ("alpha", "gamma"))


# -- the search index's migration --------------------------------------------------------------------------
def test_a_schema_6_store_gets_its_search_index_and_a_desk_searches_one_without_it(portal_stores, tmp_path):
    source = portal_stores["sqlite"].removeprefix("sqlite:///")
    copy = tmp_path / "old.sqlite"
    with sqlite3.connect(source) as conn, sqlite3.connect(copy) as target:
        conn.backup(target)
    with sqlite3.connect(copy) as conn:
        for name in ("articles_fts_insert", "articles_fts_delete", "articles_fts_update"):
            conn.execute(f"DROP TRIGGER {name}")
        conn.execute("DROP TABLE articles_fts_terms")
        conn.execute("DROP TABLE articles_fts")
        conn.execute("UPDATE meta SET value = '6' WHERE key = 'schema_version'")
    conn.close()
    uri = f"sqlite:///{copy}"
    expected = _search_store(portal_stores["sqlite"], "社区食堂")
    assert _search_store(uri, "社区食堂") == expected != []  # read-only, no index: LIKE over every article
    with open_store(uri):
        pass  # a crawl's open migrates it
    with sqlite3.connect(copy) as conn:
        assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == (str(SCHEMA_VERSION),)
        assert conn.execute("SELECT COUNT(*) FROM articles_fts WHERE articles_fts MATCH '\"社区食堂\"'").fetchone()[0] == 2
    conn.close()
    assert _search_store(uri, "社区食堂") == expected


def test_a_schema_6_postgresql_store_gets_its_trigram_indexes(postgres):  # noqa: F811
    import psycopg

    uri = postgres.create_database("desk_migrate")
    with open_store(uri):
        pass
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute("DROP INDEX articles_title_trgm")
        conn.execute("DROP INDEX articles_text_trgm")
        conn.execute("UPDATE meta SET value = '6' WHERE key = 'schema_version'")
    with open_store(uri):
        pass
    with psycopg.connect(uri, autocommit=True) as conn:
        indexes = {row[0] for row in conn.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'articles'")}
        version = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]
    assert {"articles_title_trgm", "articles_text_trgm"} <= indexes and version == str(SCHEMA_VERSION)


SHORT_WORDS = {  # query -> URLs whose title or text contains every word (any case)
    "己": {"http://a/1"}, "戊己": {"http://a/1"}, "未": {"http://a/1"}, "巳午": {"http://a/1"},
    "己子": set(), "丁": {"http://a/1", "http://b/1"}, "丁 未": {"http://a/1"}, "ab": {"http://b/1"},
    "AB": {"http://b/1"}, "b": {"http://b/1"}, "丁戊己": {"http://a/1"}, '"': {"http://b/1"}, "%": set(), "x_": set(),
}


def test_words_of_one_and_two_characters_are_found_anywhere_even_at_the_very_end_on_both_stores(store_uri):
    """Through the trigram index on SQLite, a short word at the end of a title or text too (each is indexed with two
    line feeds after it); never across the title and the text; LIKE's wildcards are plain characters."""
    from newsdedup.storage.base import ArticleRecord

    with open_store(store_uri) as store:
        for url, title, text in (("http://a/1", "甲乙丙丁戊己", "子丑寅卯辰巳午未"),
                                 ("http://b/1", "丁 Xab", 'Ab "quoted" 丑寅')):
            article_id = store.new_article_id()
            store.add_article(ArticleRecord(
                id=article_id, url=url, site="s", title=title, text=text, published_at=None, author=None, source=None,
                canonical_url=url, fetched_at="2026-11-20T00:00:00+00:00", fingerprint=url.encode(),
                cluster_id=article_id, method="spotsigs"))
    store = open_readonly(store_uri)
    try:
        found = {query: {hit.url for hit in store.search_articles(query.split())} for query in SHORT_WORDS}
    finally:
        store.close()
    assert found == SHORT_WORDS


def _search_store(uri: str, query: str) -> list[str]:
    store = open_readonly(uri)
    try:
        return sorted(hit.url for hit in store.search_articles(query.split()))
    finally:
        store.close()


# -- in a real browser -------------------------------------------------------------------------------------
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _start_desk(uri: str, *extra: str) -> tuple[subprocess.Popen, str]:
    """``newsdedup serve`` in its own process; returns it and its base URL once it answers."""
    import time
    import urllib.request

    port = _free_port()
    process = subprocess.Popen([sys.executable, "-m", "newsdedup.cli", "serve", "--storage", uri, "--port", str(port),
                                *extra], cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:  # until it answers (or has died): a start-up, not a measured time
        try:
            with urllib.request.urlopen(base + "/api/runs/latest", timeout=5):
                return process, base
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise AssertionError(f"the desk did not start: {process.communicate()[1]}") from None
            time.sleep(0.1)


@pytest.mark.skipif(not __import__("os").path.exists(CHROMIUM), reason="Debian's chromium is not installed")
def test_in_chromium_now_a_story_its_origin_site_a_search_and_a_watch_work_and_hostile_values_do_nothing(
        portal_stores, tmp_path):
    playwright = pytest.importorskip("playwright.sync_api")
    db = tmp_path / "desk.sqlite"  # a copy: the test adds a run to it
    with sqlite3.connect(portal_stores["sqlite"].removeprefix("sqlite:///")) as source, sqlite3.connect(db) as target:
        source.backup(target)
    source.close()
    target.close()
    process, base = _start_desk(f"sqlite:///{db}", "--poll", "0.2", "--watches", str(tmp_path / "watches.toml"))
    problems: list[str] = []
    requests: list[str] = []
    try:
        with playwright.sync_playwright() as driver:
            browser = driver.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.on("console", lambda msg: problems.append(f"console {msg.type}: {msg.text}")
                    if msg.type in ("error", "warning") else None)
            page.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
            page.on("dialog", lambda dialog: (problems.append(f"dialog: {dialog.message}"), dialog.dismiss()))
            page.on("request", lambda request: requests.append(request.url))

            def shot(name: str) -> None:
                page.screenshot(path=str(tmp_path / f"{name}.png"), full_page=True)
                assert page.evaluate("typeof window.__pwned") == "undefined", name

            page.goto(base + "/")
            assert page.locator("table.stories a.story").first.inner_text() == CANTEEN_TITLE
            shot("now")
            page.locator("table.stories a.story").first.click()
            page.wait_for_selector("table.diff")
            assert "What gamma changed" in page.content()
            shot("story")
            page.locator("tr.origin a.chip").click()
            page.wait_for_selector("table.runs")
            assert page.url == base + "/sites/alpha"
            shot("origin-site")
            page.fill("nav form.quick input", "社区食堂")
            page.press("nav form.quick input", "Enter")
            page.wait_for_selector("#chart[data-drawn] canvas")
            assert page.locator(".snippet mark").first.inner_text() == "社区食堂"
            shot("search")
            hostile = story_id_in(page, base, HOSTILE_TITLE)
            page.goto(f"{base}/story/{hostile}")
            assert page.locator("h1").inner_text() == HOSTILE_TITLE  # the markup shown as text
            assert page.locator('a[href^="javascript:"], a[href^="data:"], [onerror], script:not([src])').count() == 0
            shot("hostile-story")
            page.goto(base + "/search?q=" + "港务集团")
            assert page.locator(".snippet").count() == 1  # alpha's copy is an exact repeat of it
            assert page.locator('a[href^="javascript:"], a[href^="data:"], [onerror], script:not([src])').count() == 0
            shot("hostile-search")
            page.click("nav >> text=Watches")
            page.fill("form.watch input[name=name]", "ports")
            page.fill("form.watch input[name=query]", "港务集团")
            page.fill("form.watch input[name=notify]", "json://127.0.0.1:9/hook")
            page.click("form.watch button")
            page.wait_for_selector("table.watches")
            assert page.locator("table.watches td").first.inner_text() == "ports"
            shot("watch-created")
            # A run lands while Now is open: the page says so.
            page.goto(base + "/")
            assert page.locator("#new-runs").is_hidden()
            with sqlite3.connect(db) as conn:
                conn.execute("INSERT INTO site_runs VALUES ('2099-01-01T00:00:00+00:00', 'alpha', "
                             "'2099-01-01T00:01:00+00:00', 'finished', 0, 1, 1, 1, 1, 0, 0, 0)")
            conn.close()
            page.wait_for_selector("#new-runs:not([hidden])", timeout=30000)
            shot("new-runs")
            browser.close()
    finally:
        process.terminate()
        process.wait(timeout=30)
    assert problems == []
    assert all(url.startswith(base + "/") for url in requests), [u for u in requests if not u.startswith(base)]


def story_id_in(page, base: str, title: str) -> int:
    data = page.request.get(base + "/api/now").json()
    return next(s["cluster_id"] for s in data["stories"] if s["title"] == title)
