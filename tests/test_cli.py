"""The ``newsdedup`` command line as a user runs it (subprocesses, real files)."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib

import pytest

from conftest import REPO_ROOT

FIXTURES = REPO_ROOT / "tests" / "fixtures" / "pages"

STORY = (
    "临江市今天正式开通首条全自动驾驶公交线路，线路全长十二公里，沿途设置十八个站点。"
    "市交通运输局负责人介绍，首批投入运营的十辆自动驾驶公交车均配备激光雷达和毫米波雷达。"
    "车辆在封闭测试场内累计完成了三万公里的测试，各项安全指标均达到设计要求。"
    "首日运营期间，线路共运送乘客两千余人次，未发生任何安全事故。"
    "不少市民专程前来体验，一位退休教师表示，车辆起步和刹车都很平稳，乘坐感受和普通公交差别不大。"
    "按照计划，明年上半年全市还将新增三条自动驾驶公交线路，覆盖高铁站和主要商业区。"
)
OTHER = (
    "第十五届临江国际马拉松赛昨日鸣枪开跑，来自二十六个国家和地区的三万名选手参加比赛。"
    "男子全程冠军由肯尼亚选手以两小时八分的成绩获得，女子冠军则被一名国内选手夺得。"
    "赛事组委会在沿途设置了二十个补给站和十二个医疗点，志愿者人数超过四千人。"
    "据统计，赛事期间全市酒店入住率达到九成以上，带动餐饮和旅游消费超过两亿元。"
    "组委会表示，明年将进一步优化赛道设计，增加沿江风景路段。"
)


def run_cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "newsdedup.cli", *args], cwd=REPO_ROOT, input=stdin,
        capture_output=True, text=True, timeout=300,
    )


def test_help_lists_every_command():
    result = run_cli("--help")
    assert result.returncode == 0
    for command in ("demo", "export", "failures", "extract", "dedup", "antecedents", "eval"):
        assert command in result.stdout


def test_extract_prints_json_lines_and_reports_skips():
    pages = [str(FIXTURES / "article_related.html"), str(FIXTURES / "list_page.html")]
    result = run_cli("extract", *pages)
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(lines) == 1
    record = lines[0]
    assert set(record) == {"path", "url", "title", "text", "published_at", "author", "source"}
    assert record["path"] == pages[0] and record["text"] and "相关阅读" not in record["text"]
    assert "list_page.html: skipped (list_page)" in result.stderr


def test_dedup_stream_tags_exact_and_near_duplicates_in_order(tmp_path):
    edited = STORY.replace("十二公里", "约十二公里").replace("两千余人次", "两千多人次") + "本文来源：临江日报。"
    docs = [
        {"id": "a", "text": STORY},
        {"id": "b", "text": OTHER},
        {"id": "c", "text": "  " + STORY.replace("，", ",") + "\n"},  # width and spacing only
        {"id": "d", "text": edited, "title": "自动驾驶公交开通"},
    ]
    source = tmp_path / "docs.jsonl"
    source.write_text("\n".join(json.dumps(d, ensure_ascii=False) for d in docs) + "\nnot json\n", encoding="utf-8")
    out = tmp_path / "verdicts.jsonl"
    result = run_cli("dedup", "--input", str(source), "--output", str(out), "--workers", "0")
    assert result.returncode == 0, result.stderr
    verdicts = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [v["id"] for v in verdicts] == ["a", "b", "c", "d"]
    assert set(verdicts[0]) == {"id", "status", "duplicate_of", "cluster_id", "similarity", "method", "score", "measure",
                                "reuses"}
    assert [v["reuses"] for v in verdicts] == [[], [], [], []]  # copies and unrelated texts share no passage
    assert [v["status"] for v in verdicts] == ["unique", "unique", "exact_duplicate", "near_duplicate"]
    assert verdicts[2]["duplicate_of"] == "a" and verdicts[3]["duplicate_of"] == "a"
    assert verdicts[3]["cluster_id"] == verdicts[0]["cluster_id"] != verdicts[1]["cluster_id"]
    assert 0.5 <= verdicts[3]["similarity"] <= 1  # the edits may touch no spot, so 1.0 is possible
    assert verdicts[3]["measure"] == "jaccard" and verdicts[3]["score"] == verdicts[3]["similarity"]
    assert (verdicts[2]["similarity"], verdicts[2]["measure"]) == (1.0, "exact")
    assert "4 documents: 2 unique, 1 near duplicate, 1 exact duplicate; 1 bad input line skipped" in result.stderr


def test_dedup_rejects_a_bad_method_with_a_clear_message():
    result = run_cli("dedup", "--input", "-", "--output", "-", "--tau", "1.5", stdin="")
    assert result.returncode == 2
    assert "tau" in result.stderr
    result = run_cli("dedup", "--input", "-", "--output", "-", "--containment-whole-below", "2", stdin="")
    assert result.returncode == 2 and "containment_whole_below" in result.stderr


def test_export_of_a_missing_database_is_a_clear_error(tmp_path):
    result = run_cli("export", "--storage", f"sqlite:///{tmp_path / 'none.sqlite'}")
    assert result.returncode == 2 and "no database" in result.stderr


def test_demo_runs_end_to_end_and_summarises(tmp_path):
    result = run_cli("demo", "--storage", f"sqlite:///{tmp_path / 'demo.sqlite'}", "--workers", "1")
    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    assert "Run 1" in out and "Run 2" in out
    assert "14 stories" in out  # the demo has 14 distinct stories over its two days
    # Each run's per-site table adds up: every article link is known, fetched, failed or behind robots.txt,
    # and every fetched page is stored, a repeat or skipped (the demo serves one 404 and one robots-only page).
    header = "site      list pages  article links  known  fetched  stored  new  near  repeats  skipped  failed"
    assert out.count(header) == 2, out
    rows = [line.split() for line in out.splitlines() if line.split()[:1] in (["dongfang"], ["nanling"], ["xinghe"], ["qinghe"])]
    assert len(rows) == 8, out
    robots = {1: 0, 2: 0}
    for number, row in enumerate(rows):
        _, lists, links, known, fetched, stored, new, near, repeats, skipped, failed = row[:1] + [int(v) for v in row[1:]]
        assert lists > 0 and stored == new + near and fetched == stored + repeats + skipped, row
        robots[1 + number // 4] += links - known - fetched - failed
    assert robots == {1: 1, 2: 1}, out  # the qinghe preview page robots.txt forbids, in both runs
    exported = run_cli("export", "--storage", f"sqlite:///{tmp_path / 'demo.sqlite'}")
    assert len(exported.stdout.splitlines()) == 23  # every article page of day 2, stored or repeated


def test_eval_without_the_shared_data_says_where_to_point_it(tmp_path):
    result = run_cli("eval", "--data", str(tmp_path / "missing"), "--out", str(tmp_path / "out"), "--no-progress")
    assert result.returncode == 2
    assert "--data" in result.stderr and "shared" in result.stderr
    assert not (tmp_path / "out" / "results.json").exists()


@pytest.mark.parametrize("args, message", [
    (["--distributed", "1"], "2 or more"),
    (["--redis-url", "redis://127.0.0.1:1/0"], "2 or more"),
    (["--distributed", "2", "--storage-uri", "postgresql://127.0.0.1:1/x"], "needs a Redis URL"),
    (["--distributed", "2", "--redis-url", "redis://127.0.0.1:1/0"], "empty PostgreSQL database"),
    (["--distributed", "2", "--redis-url", "redis://127.0.0.1:1/0", "--storage-uri", "postgresql://127.0.0.1:1/x",
      "--stages", "text"], "add pages to --stages"),
    (["--distributed", "2", "--redis-url", "redis://127.0.0.1:1/0", "--storage-uri", "postgresql://127.0.0.1:1/x"],
     "does not answer"),  # checked before the stages, not after the first hour of them
])
def test_eval_distributed_needs_both_servers_before_it_runs_anything(tmp_path, args, message):
    result = run_cli("eval", "--data", str(tmp_path), "--out", str(tmp_path / "out"), "--no-progress", *args)
    assert result.returncode == 2 and message in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and not (tmp_path / "out").exists()


def test_eval_refuses_to_lower_a_floor_without_a_reason(tmp_path):
    floors = tmp_path / "floors.toml"
    floors.write_text('[minimum]\n"text_level.default.f1" = 0.98\n', encoding="utf-8")
    result = run_cli("eval", "--floors", str(floors), "--lower-floor", "text_level.default.f1=0.9")
    assert result.returncode == 2 and "reason" in result.stderr
    assert tomllib.loads(floors.read_text(encoding="utf-8")) == {"minimum": {"text_level.default.f1": 0.98}}
    result = run_cli("eval", "--floors", str(floors), "--lower-floor", "text_level.default.f1=0.9",
                     "--reason", "benchmark made harder")
    assert result.returncode == 0, result.stderr
    assert "Floor-lowered: text_level.default.f1 0.98 -> 0.9: benchmark made harder" in result.stdout
    assert tomllib.loads(floors.read_text(encoding="utf-8")) == {"minimum": {"text_level.default.f1": 0.9}}


def test_failures_lists_failed_and_retried_pages_with_attempts_and_next_try(tmp_path):
    from newsdedup.storage import open_store
    from newsdedup.storage.base import FailureRecord, SkippedRecord

    uri = f"sqlite:///{tmp_path / 'news.sqlite'}"
    with open_store(uri) as store:
        store.add_failure(FailureRecord("http://a/1", "sina", "http_500", "HTTP 500", "2026-11-21T08:00:00+00:00",
                                        attempts=2, next_try_at="2026-11-21T09:00:00+00:00"))
        store.add_skipped(SkippedRecord("http://a/2", "sohu", "too_short", "shorter than 150", "2026-11-21T07:00:00+00:00",
                                        attempts=4))
        store.add_skipped(SkippedRecord("http://a/3", "sohu", "video", "a video page", "2026-11-21T07:00:00+00:00"))
    result = run_cli("failures", "--storage", uri)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 2  # the video page is what it is, not a failure
    assert lines[0].split()[:4] == ["failed", "http_500", "sina", "2"] and "next 2026-11-21T09:00:00+00:00" in lines[0]
    assert lines[1].split()[:4] == ["skipped", "too_short", "sohu", "4"] and "next given up" in lines[1]
    assert "2 pages: 1 to be tried again, 1 given up" in result.stderr
    rows = [json.loads(line) for line in run_cli("failures", "--storage", uri, "--site", "sohu", "--json").stdout.splitlines()]
    assert [(r["url"], r["reason"], r["next_try_at"]) for r in rows] == [("http://a/2", "too_short", None)]
    rows = [json.loads(line) for line in run_cli("failures", "--storage", uri, "--site", "sohu,sina", "--json").stdout.splitlines()]
    assert sorted(r["url"] for r in rows) == ["http://a/1", "http://a/2"]


def test_failures_and_export_of_a_file_that_is_no_database_say_so_in_one_line(tmp_path):
    bad = tmp_path / "notes.sqlite"
    bad.write_text("not a database\n" * 50)
    for command in ("failures", "export", "report"):
        result = run_cli(command, "--storage", f"sqlite:///{bad}")
        assert result.returncode == 2
        assert result.stderr.strip().splitlines() == [
            f"newsdedup {command}: error: {bad} is not a usable newsdedup database (file is not a database): "
            "move it away or name another file (--storage sqlite:///PATH)"
        ]
