"""Passage reuse end to end (issue 26): a commentary on one site quoting three paragraphs of an earlier report on
another is stored as its own story, with one reuse record naming the report and the passages; the report's
"quoted by" and ``newsdedup export`` show it.

Real ``scrapy crawl`` processes against a local site (tests/local_site.py) writing to SQLite, and a distributed crawl
of two processes on Redis and PostgreSQL; the texts are invented for this test.
"""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess

import jsonschema

from conftest import REPO_ROOT
from local_site import LocalSite, check_store_consistent, crawl, export_rows, newsdedup
from server_fixtures import postgres, redis_server  # noqa: F401 - fixtures
from test_distributed import export, finish, servers, start_workers, worker_command  # noqa: F401 - servers: a fixture

from newsdedup.monitoring.report import REPORT_SCHEMA

REPORT = [
    "青川市轨道交通二号线今天上午正式开通运营，线路全长二十八公里，设车站二十一座，连接高铁站和老城区。",
    "市轨道交通集团介绍，二号线采用六节编组列车，高峰时段行车间隔四分三十秒，单程运行时间约五十分钟。",
    "开通首日，不少市民专程前来体验。家住老城区的刘女士说，以前去高铁站要换乘两趟公交，现在坐地铁半小时就到。",
    "为方便换乘，二号线在人民广场站与一号线实现同站台换乘，乘客无需出站即可换乘，节省了大量步行时间。",
    "票价方面，二号线实行里程计价，起步价二元，最高票价六元，市民可使用交通卡、手机二维码等方式进站。",
    "据了解，青川市三号线和四号线正在加紧建设，预计后年底前全部建成，届时全市轨道交通运营里程将超过一百公里。",
]
QUOTED = REPORT[1:4]  # three paragraphs, as the commentary quotes them
COMMENTARY = [
    "城市轨道交通的每一次延伸，都在改变市民的出行方式，也在检验一座城市的治理能力。",
    "据本地媒体报道：",
    *QUOTED,
    "地铁开通只是第一步。接驳公交能否及时调整线路，站点周边的非机动车停放能否规范有序，都需要相关部门提前谋划。",
    "此外，老城区道路狭窄，施工期间积累的交通问题也应借此机会一并解决，让新线路真正方便群众出行。",
    "交通设施的价值最终要由市民的获得感来衡量，这需要规划、建设和管理各环节持续用力，久久为功。",
]


def squeeze(text: str) -> str:
    return re.sub(r"\s+", "", text)


def test_a_commentary_quoting_three_paragraphs_keeps_its_story_and_records_the_reuse(tmp_path):
    db = tmp_path / "news.sqlite"
    sites_file = tmp_path / "sites.toml"
    with LocalSite(("qingchuan", "pinglun")) as site:
        report_url = site.publish("qingchuan", 1, "青川地铁二号线今天开通", REPORT, "2026-11-20 09:00")
        sites_file.write_text(site.sites_toml(("qingchuan",)), encoding="utf-8")
        crawl(sites_file, db)
        # The next day a commentary on another site quotes the report; the reuse index comes from the store.
        commentary_url = site.publish("pinglun", 1, "地铁开通之后还要做什么", COMMENTARY, "2026-11-21 08:00")
        sites_file.write_text(site.sites_toml(), encoding="utf-8")
        log = crawl(sites_file, db)
    check_store_consistent(db)

    rows = {row["url"]: row for row in export_rows(db)}
    report, commentary = rows[report_url], rows[commentary_url]
    assert commentary["status"] == "unique" and commentary["cluster_id"] != report["cluster_id"]
    assert report["reuses"] == []
    [reuse] = commentary["reuses"]
    assert reuse["source_url"] == report_url and reuse["source_cluster_id"] == report["cluster_id"]
    quoted = squeeze("".join(QUOTED))
    assert len(quoted) <= reuse["chars"] <= len(quoted) + 5  # the three paragraphs, not the text around them
    passages = reuse["passages"]
    taken = "".join(squeeze(commentary["text"][p["start"]:p["start"] + p["length"]]) for p in passages)
    from_source = "".join(squeeze(report["text"][p["source_start"]:p["source_start"] + p["source_length"]])
                          for p in passages)
    assert quoted in taken and quoted in from_source  # the offsets point at the quoted paragraphs in both texts
    assert abs(reuse["source_fraction"] - len(quoted) / len(squeeze(report["text"]))) < 0.02
    assert abs(reuse["fraction"] - len(quoted) / len(squeeze(commentary["text"]))) < 0.02

    conn = sqlite3.connect(db)
    assert conn.execute("SELECT COUNT(*) FROM reuses").fetchone()[0] == 1
    conn.close()
    assert re.search(r"pinglun .*\n.*reusing a passage of an earlier story 1", log), log[-3000:]

    result = newsdedup("report", "--storage", f"sqlite:///{db}", "--format", "json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    jsonschema.validate(data, REPORT_SCHEMA)
    [story] = data["quoted"]
    assert story["source"]["url"] == report_url and story["cluster_id"] == report["cluster_id"]
    [quote] = story["quoted_by"]
    assert quote["url"] == commentary_url and quote["site"] == "pinglun"
    assert quoted in squeeze("".join(p["text"] for p in quote["passages"]))
    page = newsdedup("report", "--storage", f"sqlite:///{db}", "--format", "html")
    assert "Quoted by" in page.stdout and commentary_url in page.stdout and QUOTED[0][:30] in page.stdout


def test_with_reuse_switched_off_nothing_is_recorded(tmp_path):
    db = tmp_path / "news.sqlite"
    sites_file = tmp_path / "sites.toml"
    with LocalSite(("qingchuan", "pinglun")) as site:
        site.publish("qingchuan", 1, "青川地铁二号线今天开通", REPORT, "2026-11-20 09:00")
        sites_file.write_text(site.sites_toml(("qingchuan",)), encoding="utf-8")
        crawl(sites_file, db, "-s", "NEWSDEDUP_REUSE=False")
        site.publish("pinglun", 1, "地铁开通之后还要做什么", COMMENTARY, "2026-11-21 08:00")
        sites_file.write_text(site.sites_toml(), encoding="utf-8")
        crawl(sites_file, db, "-s", "NEWSDEDUP_REUSE=False")
    assert [row["reuses"] for row in export_rows(db)] == [[], []]


def test_a_distributed_crawls_writer_records_the_reuse_and_the_fetching_process_gets_it_in_its_verdict(
        servers, tmp_path):
    """Two processes sharing Redis and PostgreSQL: the writer (whichever it is) rebuilds the reuse index from the
    store and records the commentary's reuse; the process that fetched the commentary writes the reuse in its feed,
    from the verdict the writer posted through Redis."""
    store_uri = servers[0]
    sites_file = tmp_path / "sites.toml"
    with LocalSite(("qingchuan", "pinglun")) as site:
        report_url = site.publish("qingchuan", 1, "青川地铁二号线今天开通", REPORT, "2026-11-20 09:00")
        sites_file.write_text(site.sites_toml(("qingchuan",)), encoding="utf-8")
        logs = [tmp_path / "a1.log", tmp_path / "a2.log"]
        finish(start_workers(sites_file, servers, logs), logs)
        commentary_url = site.publish("pinglun", 1, "地铁开通之后还要做什么", COMMENTARY, "2026-11-21 08:00")
        sites_file.write_text(site.sites_toml(), encoding="utf-8")
        logs = [tmp_path / "b1.log", tmp_path / "b2.log"]
        feeds = [tmp_path / "b1.jsonl", tmp_path / "b2.jsonl"]
        processes = [subprocess.Popen(worker_command(sites_file, servers, "-O", str(feed)), cwd=REPO_ROOT,
                                      stderr=subprocess.STDOUT, stdout=open(log, "w", encoding="utf-8"))  # noqa: SIM115
                     for log, feed in zip(logs, feeds)]
        finish(processes, logs)

    rows = {row["url"]: row for row in export(store_uri)}
    assert rows[commentary_url]["status"] == "unique"
    [reuse] = rows[commentary_url]["reuses"]
    assert reuse["source_url"] == report_url and reuse["source_cluster_id"] == rows[report_url]["cluster_id"]
    fed = [json.loads(line) for feed in feeds if feed.exists() for line in feed.read_text().splitlines()]
    assert [row["reuses"] for row in fed if row["url"] == commentary_url] == [rows[commentary_url]["reuses"]]


def test_a_story_stored_earlier_in_the_same_crawl_is_found_while_its_batch_is_still_open(tmp_path):
    """The report is stored (its batch not yet committed) and indexed before the commentary arrives, in one crawl."""
    db = tmp_path / "news.sqlite"
    sites_file = tmp_path / "sites.toml"
    with LocalSite(("qingchuan", "pinglun")) as site:
        report_url = site.publish("qingchuan", 1, "青川地铁二号线今天开通", REPORT, "2026-11-20 09:00")
        # Answered once the report's page was sent whole: the report reaches the pipelines first, and the stages
        # decide pages in the order they arrive (crawl/ordering.py), whatever the machine's speed.
        commentary_url = site.publish("pinglun", 1, "地铁开通之后还要做什么", COMMENTARY, "2026-11-21 08:00",
                                      after=report_url)
        sites_file.write_text(site.sites_toml(), encoding="utf-8")
        crawl(sites_file, db)
    rows = {row["url"]: row for row in export_rows(db)}
    assert [reuse["source_url"] for reuse in rows[commentary_url]["reuses"]] == [report_url]
    assert rows[report_url]["reuses"] == []


ROUNDUP = [
    "一周城市观察：本周我市交通和城市治理领域有几件事值得关注，我们摘编如下，供读者参考。",
    *REPORT[4:6],
    *COMMENTARY[6:8],
    "下周我们将继续关注轨道交通沿线的配套建设情况，欢迎读者来信提供线索。",
]


def test_crawls_opening_the_saved_reuse_index_record_what_crawls_rebuilding_it_record(tmp_path):
    """Three crawls, each adding a story that quotes the earlier ones, with the index saved beside the database
    (the default) and with NEWSDEDUP_STATE_DIR=none (rebuilt at each start): the same reuse records."""
    sites_file = tmp_path / "sites.toml"
    logs: dict[str, list[str]] = {"saved": [], "none": []}
    with LocalSite(("qingchuan", "pinglun", "zhoukan")) as site:
        site.publish("qingchuan", 1, "青川地铁二号线今天开通", REPORT, "2026-11-20 09:00")
        site.publish("pinglun", 1, "地铁开通之后还要做什么", COMMENTARY, "2026-11-21 08:00")
        site.publish("zhoukan", 1, "一周城市观察", ROUNDUP, "2026-11-22 08:00")
        for sites in (("qingchuan",), ("qingchuan", "pinglun"), ("qingchuan", "pinglun", "zhoukan")):
            sites_file.write_text(site.sites_toml(sites), encoding="utf-8")
            logs["saved"].append(crawl(sites_file, tmp_path / "saved.sqlite"))
            logs["none"].append(crawl(sites_file, tmp_path / "none.sqlite", "-s", "NEWSDEDUP_STATE_DIR=none"))
    assert (tmp_path / "saved.sqlite.state" / "reuse" / "meta.json").exists()
    assert not (tmp_path / "none.sqlite.state").exists()
    assert all("passage-reuse index opened from" in log for log in logs["saved"][1:])
    assert not any("passage-reuse index opened from" in log for log in logs["none"])
    records = {name: sorted((row["url"], row["status"], json.dumps(row["reuses"], sort_keys=True))
                            for row in export_rows(tmp_path / f"{name}.sqlite")) for name in logs}
    assert records["saved"] == records["none"]
    reuses = {url: json.loads(reuses) for url, _, reuses in records["saved"]}
    assert sorted(len(found) for found in reuses.values()) == [0, 1, 2]  # the roundup quotes both earlier stories
