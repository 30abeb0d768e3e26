"""The page-level benchmark crawled by 2 processes against real Redis and PostgreSQL (issue 26: the distributed
crawl is measured as the single-process one is).

The first test needs no shared data: a small site of our own shells and texts, its 2-process export scored by the
harness, every figure checked against the export itself. The last runs the real shells when the shared data is
there (skipped without it).
"""

from __future__ import annotations

import itertools
import json
import uuid
from collections import defaultdict
from urllib.parse import urlsplit

import pytest

from server_fixtures import postgres, redis_server  # noqa: F401 - fixtures
from test_evaluation_pages import NEW_TEXT, OLD_PARAGRAPHS, shells_fixture
from newsdedup.evaluation.page_level import (
    PageBenchmark,
    crawl_page_benchmark,
    run_page_level,
)
from newsdedup.evaluation.pages import build_site
from newsdedup.evaluation.suite import format_markdown, format_summary, page_level_summary

OLD_TEXT = "\n".join(OLD_PARAGRAPHS) + "\n码头边的老茶馆也重新开了张，老板说周末的游客比过去多了一倍，泡一壶茶能坐上一下午。"
MORE = (
    "城北的老纺织厂搬走以后，厂房空了整整十年，今年春天终于改造成了一座文化创意园。\n"
    "园区保留了锯齿形的屋顶和红砖外墙，车间里搭起了剧场、书店和十几间工作室，周末常常有市集和小型演出。\n"
    "园区负责人介绍，开园三个月来已经接待了二十多万人次，附近的餐馆和咖啡馆生意也跟着好了起来。",
    "今年的高温比往年来得早，城区的用电负荷连续一周刷新纪录，电力公司启动了夏季保供电预案。\n"
    "抢修队伍实行二十四小时值班，对老旧小区的变压器逐一检查，提前更换了一批容易过热的线路。\n"
    "供电部门提醒市民，空调温度不要调得太低，出门前关掉不用的电器，遇到停电可以拨打热线报修。",
    "县里的第一所乡村寄宿制小学九月就要开学了，新校舍有教学楼、宿舍、食堂和一块塑胶操场。\n"
    "学校从周边五个村招收三年级以上的学生，周一到周五住校，周末由校车送回家，家长不用再天天接送。\n"
    "校长说，学校还请来了城里的退休教师每周上音乐和美术课，孩子们最盼着的就是这两门课。",
)


def small_benchmark() -> list[dict]:
    """Two stories with copies (an exact one, an extended one, an edited one) and three stories of one page."""
    texts = [
        ("s0", "original", NEW_TEXT), ("s0", "exact", NEW_TEXT),
        ("s0", "append", NEW_TEXT + "\n记者离开时，合作社的仓库里还堆着几百箱等待发货的苹果。"),
        ("s1", "original", OLD_TEXT), ("s1", "edit", OLD_TEXT.replace("两公里长", "近两公里长").replace("暖色", "橘黄色")),
        *((f"s{n}", "singleton", text) for n, text in enumerate(MORE, start=2)),
    ]
    return [{"id": f"d{n}", "story": story, "kind": kind, "text": text, "title": f"第{n}号稿件的标题在这里"}
            for n, (story, kind, text) in enumerate(texts)]


def same_cluster_pairs(rows: list[dict], story_of_path: dict[str, str]) -> tuple[int, int]:
    """Pairs of exported pages in one cluster, and of those the pairs of one story."""
    clusters: dict[int, list[str]] = defaultdict(list)
    for row in rows:
        assert row["cluster_id"] is not None, row  # an exact repeat carries its cluster too
        clusters[row["cluster_id"]].append(story_of_path[urlsplit(row["url"]).path])
    pairs = [pair for members in clusters.values() for pair in itertools.combinations(members, 2)]
    return len(pairs), sum(a == b for a, b in pairs)


@pytest.fixture()
def servers(postgres, redis_server):  # noqa: F811 - fixtures
    return postgres.create_database(f"pages_{uuid.uuid4().hex[:8]}"), redis_server.url


def test_two_processes_crawl_the_page_benchmark_and_their_export_is_what_is_scored(servers, redis_server, tmp_path):  # noqa: F811
    store_uri, redis_url = servers
    docs = small_benchmark()
    bench = PageBenchmark(docs, build_site(docs, shells_fixture(), seed=2, gbk_share=0.25, list_size=4))
    result = crawl_page_benchmark(bench, workdir=tmp_path, processes=2, redis_url=redis_url, storage_uri=store_uri,
                                  timeout=300)
    crawl = result["crawl"]
    assert crawl["processes"] == 2 and len(crawl["article_pages_by_process"]) == 2
    assert sum(crawl["article_pages_by_process"]) == crawl["pages"] == len(docs)  # each page fetched once in all
    # (requests: a download timed out and retried on a loaded machine is requested twice, and still read once)
    assert crawl["article_requests"] >= len(docs) and crawl["unknown_urls"] == 0
    assert crawl["stored_twice"] == 0 and crawl["exported"] + crawl["skipped"] == len(docs)
    assert sorted(p.name for p in tmp_path.glob("crawl-*.log")) == ["crawl-1.log", "crawl-2.log"]
    assert "NEWSDEDUP_REDIS_URL=redis://" in result["command"]

    # The figures are those of the PostgreSQL export: recount the pairs from it.
    rows = [json.loads(line) for line in (tmp_path / "export.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(rows) == crawl["exported"] and len({r["url"] for r in rows}) == len(rows)
    story_of_doc = {d["id"]: d["story"] for d in docs}
    story_of_path = {p.path: story_of_doc[p.doc_id] for p in bench.site.pages}
    predicted, correct = same_cluster_pairs(rows, story_of_path)
    # The copies found, the singletons left alone, across 2 processes: every pair, and no other.
    assert (predicted, correct) == (4, 4), rows
    assert result["pairs"] == {"true": 4, "predicted": 4, "correct": 4}
    assert result["precision"] == result["recall"] == result["f1"] == 1.0, result
    assert crawl["statuses"].get("exact_duplicate") == 1  # the exact copy, whoever fetched it

    # The report shows the 2-process figures (results.json keeps them under page_level_distributed).
    results = {"meta": {"data": "-", "seed": 2, "python": "3", "cpus": 2, "started": "-"},
               "page_level_distributed": page_level_summary(result, "2 processes")}
    report, summary = format_markdown(results), format_summary(results)
    assert "### Page level, distributed" in report and f"| 2 processes | {result['precision']:.3f} |" in report
    assert (f"page level, 2 processes: P {result['precision']:.3f} R {result['recall']:.3f} F1 {result['f1']:.3f}, "
            f"related-reading leaks {result['related_leaks']['pages']}") in summary

    # The run's Redis keys are gone; the database now holds a crawl, so it is refused for the next run.
    import redis

    assert not list(redis.Redis.from_url(redis_url).scan_iter(match="newsdedup-eval-*"))
    with pytest.raises(ValueError, match="holds an earlier crawl"):
        crawl_page_benchmark(bench, workdir=tmp_path / "again", processes=2, redis_url=redis_url,
                             storage_uri=store_uri)


def test_a_distributed_run_needs_redis_and_postgresql(tmp_path):
    bench = PageBenchmark(small_benchmark(), build_site(small_benchmark(), shells_fixture(), seed=2))
    for kwargs, message in [({"redis_url": None, "storage_uri": "postgresql://h/db"}, "needs a Redis URL"),
                            ({"redis_url": "redis://h:1/0", "storage_uri": "sqlite:///x.sqlite"}, "PostgreSQL"),
                            ({"redis_url": "redis://h:1/0", "storage_uri": None}, "PostgreSQL")]:
        with pytest.raises(ValueError, match=message):
            crawl_page_benchmark(bench, workdir=tmp_path, processes=2, **kwargs)
    with pytest.raises(ValueError, match="for a distributed run"):
        crawl_page_benchmark(bench, workdir=tmp_path, processes=1, redis_url="redis://h:1/0")
    with pytest.raises(ValueError, match="processes must be"):
        crawl_page_benchmark(bench, workdir=tmp_path, processes=0)
    assert not list(tmp_path.iterdir())  # refused before anything ran


def test_two_processes_crawl_a_small_real_page_benchmark(shared_data, servers, tmp_path):
    # The bar of the single-process run in test_evaluation_pages (F1 > 0.8 on 40 documents: a few pairs move it by
    # several points, so the two are not compared here; the full benchmark compares them, docs/evaluation.md).
    store_uri, redis_url = servers
    result = run_page_level(shared_data, docs=40, max_shells=16, workdir=tmp_path, workers=2, processes=2,
                            redis_url=redis_url, storage_uri=store_uri)
    crawl = result["crawl"]
    assert sum(crawl["article_pages_by_process"]) == crawl["pages"] == result["docs"] and crawl["stored_twice"] == 0
    assert crawl["exported"] + crawl["skipped"] == crawl["pages"] and crawl["unknown_urls"] == 0
    # The sample is seeded: 16 usable shells of the 16 drawn, 33 same-story pairs among the documents.
    assert result["shells"]["real"] == 16 and result["pairs"]["true"] == 33, (result["shells"], result["pairs"])
    assert result["f1"] > 0.8, result  # real pages: a quality bar, not a known value
