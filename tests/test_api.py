"""The library API at the package top: ``newsdedup.extract_article`` and ``newsdedup.Deduplicator``.

Its docstring examples run as doctests (newsdedup/api.py); these tests check what they cannot show: that the
parameters are the settings, that a store gives the verdicts memory gives and goes on across runs, that
``newsdedup dedup`` (now the Deduplicator) writes what it wrote before, and that ``import newsdedup`` stays cheap.
"""

from __future__ import annotations

import gzip
import inspect
import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO_ROOT

import newsdedup
from newsdedup import defaults
from newsdedup.api import setting_of
from newsdedup.cli import main
from newsdedup.storage import open_store

STORY = ("国家统计局今天发布数据显示，十月份全国居民消费价格同比上涨百分之二点五，其中城市上涨百分之二点五，农村上涨百分之二点四；"
         "食品价格上涨百分之三点三，非食品价格上涨百分之二点四。统计局的专家表示，猪肉和鲜菜的价格是主要的推动因素，"
         "而能源价格的上涨也在其中起了一定的作用。")
OTHER = ("第二届中国国际进口博览会今天在上海开幕，来自一百五十多个国家和地区的三千多家企业参展。展会期间还将举办虹桥国际经济论坛，"
         "围绕开放创新、贸易与投资等议题展开讨论。主办方表示，本届展会的展览面积比上一届扩大了三万平方米，参展的世界五百强企业也更多。")
# A reprint: the body with the day named, a source line in front and the editor's sentence at the end.
REPRINT = "（来源：新华社）" + STORY.replace("今天", "11月9日") + "业内人士认为，这一涨幅仍在市场的预期之内。"
STREAM = [("a", STORY), ("b", OTHER), ("c", STORY), ("d", REPRINT), ("e", OTHER + "（完）"), ("f", "短讯")]


def statuses(verdicts):
    return [(v.id, v.status, v.duplicate_of, v.cluster_id) for v in verdicts]


def test_the_parameters_are_the_settings_with_their_defaults():
    parameters = inspect.signature(newsdedup.Deduplicator).parameters
    settings = {setting_of(name): parameter.default for name, parameter in parameters.items() if name != "store"}
    assert settings == {name: getattr(defaults, name) for name in settings}
    # Every setting of the dedup decision and its features is one.
    dedup_groups = ("NEWSDEDUP_NEAR_", "NEWSDEDUP_SEGMENTER", "NEWSDEDUP_STOPWORDS", "NEWSDEDUP_SIMHASH_",
                    "NEWSDEDUP_SPOTSIGS_", "NEWSDEDUP_ESIMHASH_", "NEWSDEDUP_DWDCS_", "NEWSDEDUP_EXACT_",
                    "NEWSDEDUP_RETENTION_", "NEWSDEDUP_REUSE")
    assert sorted(name for name in vars(defaults) if name.startswith(dedup_groups)) == sorted(settings)


def test_in_memory_a_stream_gets_unique_exact_and_near_verdicts():
    dedup = newsdedup.Deduplicator()
    verdicts = [dedup.add(text, id=key) for key, text in STREAM]
    assert statuses(verdicts) == [
        ("a", "unique", None, "a"), ("b", "unique", None, "b"), ("c", "exact_duplicate", "a", "a"),
        ("d", "near_duplicate", "a", "a"), ("e", "near_duplicate", "b", "b"), ("f", "unique", None, "f"),
    ]
    near = verdicts[3]
    assert 0.5 <= near.similarity < 1 and near.measure == "jaccard" and near.method == "spotsigs"


def test_a_threshold_given_changes_the_decision():
    strict = newsdedup.Deduplicator(spotsigs_tau=0.99, spotsigs_min_containment=None)
    assert [strict.add(text, id=key).status for key, text in STREAM[:4]] == [
        "unique", "unique", "exact_duplicate", "unique"]
    with pytest.raises(ValueError, match="NEWSDEDUP_SPOTSIGS_TAU: expected a number, got 'high'"):
        newsdedup.Deduplicator(spotsigs_tau="high")
    with pytest.raises(ValueError, match="NEWSDEDUP_NEAR_METHOD"):
        newsdedup.Deduplicator("minhash")


@pytest.mark.parametrize("method", ["spotsigs", "simhash"])
def test_a_store_gives_the_verdicts_memory_gives_and_goes_on_across_runs(tmp_path, method):
    in_memory = newsdedup.Deduplicator(method)
    expected = statuses([in_memory.add(text, id=key) for key, text in STREAM])
    uri = f"sqlite:///{tmp_path / 'news.sqlite'}"
    with newsdedup.Deduplicator(method, store=uri) as first_run:
        verdicts = [first_run.add(text, id=key, site="demo") for key, text in STREAM[:3]]
    with newsdedup.Deduplicator(method, store=uri) as second_run:
        verdicts += list(second_run.add_many(STREAM[3:], workers=0))
    assert statuses(verdicts) == expected
    store = open_store(uri)
    store.open()
    try:
        exported = {row["url"]: (row["status"], row["duplicate_of"]) for row in store.iter_export()}
    finally:
        store.close()
    assert exported == {key: (status, duplicate_of) for key, status, duplicate_of, _ in expected}


# A commentary quoting STORY whole, with more text of its own than it quotes (issue 34: a reuse, not a copy).
COMMENT = ("评论员文章：物价走势如何看？市场对这组数据的解读出现了分歧，有人担心通胀抬头，也有人认为不必过虑。\n"
           + STORY + "\n在我们看来，这意味着通胀压力总体可控。一方面，猪肉价格的周期性上涨已经接近尾声，生猪存栏量正在"
           "逐步恢复；另一方面，国际油价近期回落，输入性通胀的压力也在减轻。货币政策因此没有必要因为短期的菜价波动而收紧，"
           "稳健的基调仍将延续，市场也不必对单月数据作过度的解读和反应。")
DISCLAIMER = ("风险提示：本文所载信息仅供参考，不构成任何投资建议。市场有风险，投资需谨慎。基金、黄金等金融产品的过往业绩并不"
              "预示其未来表现，投资者在作出投资决策前，应当认真阅读相关产品的法律文件，充分了解产品的风险收益特征。")


def relations(verdicts) -> list[tuple]:
    """(quoting id, quoted id, basis) of every reuse the verdicts carry."""
    return [((r["source_id"], v.id) if r.get("quoted_by") else (v.id, r["source_id"])) + (r["basis"],)
            for v in verdicts for r in v.reuses]


def test_the_verdict_carries_the_reuses_in_publication_order_within_the_window(tmp_path):
    dedup = newsdedup.Deduplicator()
    story, comment = dedup.add(STORY, id="story"), dedup.add(COMMENT, id="comment")
    assert (story.status, comment.status) == ("unique", "unique") and story.reuses == ()
    [reuse] = comment.reuses
    assert set(reuse) == {"source_id", "chars", "fraction", "source_fraction", "passages", "basis"}
    assert (reuse["source_id"], reuse["basis"]) == ("story", "arrival")
    assert COMMENT[reuse["passages"][0]["start"]:][:20] == STORY[reuse["passages"][0]["source_start"]:][:20]
    # The commentary arrives first, but was published after the story: the story is the quoted one.
    dedup = newsdedup.Deduplicator()
    verdicts = [dedup.add(COMMENT, id="comment", published_at="2026-11-20T15:00:00+08:00"),
                dedup.add(STORY, id="story", published_at="2026-11-20T09:00:00+08:00")]
    assert relations(verdicts) == [("comment", "story", "published")]
    [reuse] = verdicts[1].reuses  # in the quoting story's view: its offsets first
    assert reuse["quoted_by"] and COMMENT[reuse["passages"][0]["start"]:][:20] == STORY[:20]
    # A site's disclaimer two of its pages close with is no relation; switched off, nothing is recorded.
    dedup = newsdedup.Deduplicator()
    verdicts = [dedup.add(text + "\n" + DISCLAIMER, id=n, site="qianhai", title=title)
                for n, (title, text) in enumerate([("进博会开幕", OTHER), ("十月CPI上涨2.5%", STORY)])]
    assert relations(verdicts) == []
    off = newsdedup.Deduplicator(reuse=False)
    assert [off.add(text, id=key).reuses for key, text in (("story", STORY), ("comment", COMMENT))] == [(), ()]


def test_the_retention_window_applies_to_reuse(tmp_path, monkeypatch):
    import newsdedup.clock as clock

    now = ["2026-11-01T08:00:00+00:00"]
    monkeypatch.setattr(clock, "now_iso", lambda: now[0])
    dedup = newsdedup.Deduplicator(retention_days=7)
    dedup.add(STORY, id="story")
    now[0] = "2026-11-20T08:00:00+00:00"  # the story left the window
    assert dedup.add(COMMENT, id="comment").reuses == ()


def test_a_store_gives_the_reuses_memory_gives(tmp_path):
    uri = f"sqlite:///{tmp_path / 'news.sqlite'}"
    with newsdedup.Deduplicator(store=uri) as dedup:
        dedup.add(STORY, id="https://a.example.cn/1.html", site="a", published_at="2026-11-20T09:00:00+08:00")
    with newsdedup.Deduplicator(store=uri) as dedup:  # the index comes from the store
        [reuse] = dedup.add(COMMENT, id="https://b.example.cn/1.html", site="b",
                            published_at="2026-11-20T15:00:00+08:00").reuses
    memory = newsdedup.Deduplicator()
    memory.add(STORY, id="https://a.example.cn/1.html", site="a", published_at="2026-11-20T09:00:00+08:00")
    [expected] = memory.add(COMMENT, id="https://b.example.cn/1.html", site="b",
                            published_at="2026-11-20T15:00:00+08:00").reuses
    assert reuse == expected and reuse["basis"] == "published"
    store = open_store(uri)
    store.open()
    try:
        exported = {row["url"]: row["reuses"] for row in store.iter_export()}
    finally:
        store.close()
    [row] = exported["https://b.example.cn/1.html"]
    assert {k: v for k, v in row.items() if k not in ("source_url", "source_cluster_id")} == \
        {k: v for k, v in reuse.items() if k != "source_id"} and row["source_url"] == reuse["source_id"]


def test_a_store_takes_string_ids_once_and_one_writer_at_a_time(tmp_path):
    uri = f"sqlite:///{tmp_path / 'news.sqlite'}"
    with newsdedup.Deduplicator(store=uri) as dedup:
        dedup.add(STORY, id="https://news.example.cn/1.html")
        with pytest.raises(ValueError, match="already"):
            dedup.add(OTHER, id="https://news.example.cn/1.html")
        with pytest.raises(TypeError, match="string"):
            dedup.add(OTHER, id=2)
        # Another process (a crawl, a Deduplicator) cannot write the store meanwhile.
        other = subprocess.run([sys.executable, "-c", f"import newsdedup; newsdedup.Deduplicator(store={uri!r})"],
                               capture_output=True, text=True)
        assert other.returncode == 1 and "StoreInUse" in other.stderr and "in use by another" in other.stderr
    with pytest.raises(ValueError, match="closed"):
        dedup.add(OTHER, id="https://news.example.cn/2.html")


def test_extract_article_decodes_gbk_behind_a_lying_meta_and_skips_with_a_reason():
    body = "，".join(["记者从市交通委获悉本市今年将新开通三条地铁线路"] * 8) + "。"
    html = ('<html><head><meta charset="utf-8"><title>地铁新线</title></head><body><h1>地铁新线</h1>'
            f"<p>{body}</p></body></html>")
    article = newsdedup.extract_article(html.encode("gb18030"), url="https://news.example.cn/1.html")
    assert article.text.startswith("记者从市交通委获悉") and article.canonical_url == "https://news.example.cn/1.html"
    with pytest.raises(newsdedup.SkipPage) as skipped:
        newsdedup.extract_article(html.encode("gbk"), min_chars=10_000)
    assert skipped.value.reason == "too_short"


def test_importing_the_package_loads_nothing_until_the_api_is_used():
    code = ("import sys, newsdedup; before = sorted(m for m in ('newsdedup.api', 'lxml', 'jieba', 'scrapy') "
            "if m in sys.modules); newsdedup.Deduplicator().add('新闻', id=1); "
            "print(before, sorted(m for m in ('scrapy', 'twisted', 'redis', 'psycopg') if m in sys.modules), "
            "'newsdedup.api' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[] [] True"
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        newsdedup.nothing  # noqa: B018


# -- `newsdedup dedup` writes what it wrote before the library API --------------------------------------------
# `newsdedup dedup --workers 0` of the commit before the API (11e2518) on sina_sample(), ids as sample positions:
EXPECTED = REPO_ROOT / "tests" / "fixtures" / "dedup_sina_sample.expected.jsonl"


def sina_sample(data: Path) -> list[dict]:
    """Every TechNews text and the testTech text of the same page (near copies scraped twice, with exact
    repeats among them), and every 20th of the rest: 1,178 of the 9,054 texts (837 unique, 309 near and 32 exact duplicates). Ids are positions in the sample,
    so the expectation file holds no third-party text."""
    with gzip.open(data / "sina-news-2018" / "articles.jsonl.gz", "rt", encoding="utf-8") as lines:
        docs = [json.loads(line) for line in lines]
    tech = {doc["title"] for doc in docs if doc["category"] == "TechNews"}
    chosen = [doc for number, doc in enumerate(docs)
              if (doc["category"] in ("TechNews", "testTech") and doc["title"] in tech) or number % 20 == 0]
    return [{"id": position, "text": doc["text"]} for position, doc in enumerate(chosen)]


@pytest.mark.shared_data
def test_newsdedup_dedup_writes_what_the_version_before_the_api_wrote(shared_data: Path, tmp_path):
    source, output = tmp_path / "sample.jsonl", tmp_path / "verdicts.jsonl"
    source.write_text("".join(json.dumps(doc, ensure_ascii=False) + "\n" for doc in sina_sample(shared_data)),
                      encoding="utf-8")
    # With issue 34's containment rule off, the decisions are the old ones; each line has its reuses beside them.
    assert main(["dedup", "--input", str(source), "--output", str(output), "--workers", "0",
                 "--containment-min-share", "none"]) == 0
    lines = [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()]
    assert all(isinstance(line.pop("reuses"), list) for line in lines)
    assert [json.dumps(line, ensure_ascii=False) + "\n" for line in lines] == \
        EXPECTED.read_text(encoding="utf-8").splitlines(keepends=True)
    # With it (the default), a few containment matches become texts of their own.
    assert main(["dedup", "--input", str(source), "--output", str(output), "--workers", "0"]) == 0
    now = [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()]
    before = [json.loads(line) for line in EXPECTED.read_text(encoding="utf-8").splitlines()]
    changed = [(old["status"], new["status"]) for old, new in zip(before, now) if old["status"] != new["status"]]
    assert changed and set(changed) <= {("near_duplicate", "unique")}, changed


def test_the_getting_started_example_runs_as_written(tmp_path):
    """docs/getting-started.md's *Use it from Python* block, on a folder of three saved pages."""
    guide = (REPO_ROOT / "docs" / "getting-started.md").read_text(encoding="utf-8")
    example = guide.split("## Use it from Python", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    pages = tmp_path / "pages"
    pages.mkdir()
    for name, title in (("1.html", "十月CPI同比上涨2.5%"), ("2.html", "统计局：10月CPI上涨2.5%")):
        page = f"<html><head><title>{title}</title></head><body><h1>{title}</h1><p>{STORY}</p><p>{OTHER}</p></body></html>"
        (pages / name).write_bytes(page.encode("gbk"))
    (pages / "3.html").write_bytes(b"%PDF-1.7 ...")
    run = subprocess.run([sys.executable, "-c", example], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert run.stdout.splitlines() == ["1.html unique None None", "2.html exact_duplicate 1.html 1.0",
                                       "pages/3.html skipped: not_html"]
