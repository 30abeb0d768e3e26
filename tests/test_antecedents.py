"""Antecedent learning (paper §3.3) on made-up pages, the page readers, the CLI, and CWCED."""

from __future__ import annotations

from pathlib import Path

import pytest

from newsdedup.dedup.antecedents import (
    count_candidates,
    decode_bytes,
    find_page_pairs,
    learn_antecedents,
    main,
    page_visible_text,
    select_antecedents,
)
from newsdedup.dedup.spotsigs import load_antecedents

# Made-up pages, pre-segmented with spaces. Navigation and link lists use 的 and 是 but never 据, 此外
# or 了; 和 is rare; 首页 is in the candidate list yet occurs only in navigation.
NAV = "首页 | 新闻 的 频道 | 热门 的 推荐 | 今天 是 周末 | 网站 的 地图 | 首页"
BODIES = [
    "据 报道 ， 本市 的 地铁 在 今天 开通 了 。 市民 在 车站 排队 了 。 此外 ， 新 的 公交 线路 是 明天 开通 。",
    "据 报道 ， 学校 的 图书馆 在 周末 开放 了 。 学生 在 门口 等待 了 。 食堂 的 菜单 是 新 的 ， 和 以前 不同 。",
    "今年 的 游客 在 增加 。 酒店 在 涨价 了 ， 价格 上涨 了 。 此外 ， 这 是 旺季 的 原因 。",
]
PAIRS = [(f"{NAV} {body} {NAV}", body) for body in BODIES]
CANDIDATES = {"的", "在", "了", "是", "据", "此外", "和", "首页", "，", "。"}


def test_counts_t1_in_text_layers_and_t2_in_whole_pages() -> None:
    stats = count_candidates(PAIRS, str.split, CANDIDATES)
    assert stats.pages == 3
    assert stats.text["的"] == 7 and stats.page["的"] == 7 + 3 * 2 * 3  # three 的 per navigation bar, two bars
    assert stats.text["在"] == stats.page["在"] == 6
    assert stats.text["据"] == stats.page["据"] == 2
    assert stats.text_words == 63 and stats.page_words == 63 + 3 * 2 * 14  # "|" is not a word
    assert stats.text["首页"] == 0 and stats.page["首页"] == 12
    assert "，" not in stats.page  # punctuation is never a candidate
    assert stats.ratio("的") == pytest.approx(7 / 25)
    assert stats.ratio("不在列表") == 0.0


def test_learn_basic_and_optimized() -> None:
    basic, optimized = learn_antecedents(PAIRS, str.split, CANDIDATES, min_frequency=2, basic_min_share=0.05)
    # 在 and 了: frequent, never in navigation -> basic. 的 and 是: frequent but mostly navigation (t1/t2 < 0.6).
    assert basic == ["了", "在"]
    # 据 and 此外: t1/t2 = 1 > 0.9. 和 occurs once (< min_frequency), 首页 never in a text layer.
    assert optimized == ["据", "此外"]


def test_thresholds_move_words_between_lists() -> None:
    stats = count_candidates(PAIRS, str.split, CANDIDATES)
    # A lower basic ratio admits 的 (7/25 = 0.28); a share floor of 10% (6.3 words) keeps only 的 then.
    basic, optimized = select_antecedents(stats, basic_ratio=0.25, min_frequency=2, basic_min_share=0.1)
    assert basic == ["的"]
    assert optimized == ["了", "在", "据", "此外"]  # the basic list never repeats in optimized
    _, optimized = select_antecedents(stats, min_frequency=1, basic_min_share=0.05)
    assert "和" in optimized
    _, optimized = select_antecedents(stats, optimized_ratio=0.99, min_frequency=4, basic_min_share=0.05)
    assert optimized == []


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"basic_ratio": 1.5}, "basic_ratio"),
        ({"optimized_ratio": -0.1}, "optimized_ratio"),
        ({"min_frequency": 0}, "min_frequency"),
        ({"basic_min_share": 1.0}, "basic_min_share"),
    ],
)
def test_learn_validates_arguments(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        learn_antecedents(PAIRS, str.split, CANDIDATES, **kwargs)


def test_page_visible_text_drops_scripts_styles_and_head() -> None:
    html = (
        "<html><head><title>标题栏</title><style>.a{color:red}</style></head><body>"
        "<div>导航</div><script>var 广告 = 1;</script><p>正文的句子。</p><!-- 注释 --></body></html>"
    )
    text = page_visible_text(html.encode("utf-8"))
    assert "导航" in text and "正文的句子。" in text
    assert "广告" not in text and "color" not in text and "标题栏" not in text and "注释" not in text
    assert page_visible_text(b"") == ""


def test_decode_bytes_utf8_first_then_gb18030() -> None:
    assert decode_bytes("新闻正文".encode("utf-8")) == "新闻正文"
    assert decode_bytes("新闻正文".encode("gbk")) == "新闻正文"
    assert decode_bytes("新闻".encode("gbk") + b"\xff\x30") .startswith("新闻")  # invalid pair: replaced, not fatal
    html = '<html><head><meta charset="gb2312"></head><body><p>中文页面</p></body></html>'.encode("gbk")
    assert "中文页面" in page_visible_text(html)


def _write_page(path: Path, nav: str, body: str, encoding: str = "utf-8") -> None:
    html = f"<html><body><div class='nav'>{nav}</div><div class='content'><p>{body}</p></div></body></html>"
    path.write_bytes(html.encode(encoding))


def test_find_page_pairs_layouts(tmp_path: Path) -> None:
    cwced = tmp_path / "cwced"
    (cwced / "original").mkdir(parents=True)
    (cwced / "cleaned").mkdir()
    _write_page(cwced / "original" / "a1.html", "导航", "正文")
    (cwced / "cleaned" / "a1.txt").write_text("正文", encoding="utf-8")
    _write_page(cwced / "original" / "a2.html", "导航", "没有金标准")
    flat = tmp_path / "flat"
    flat.mkdir()
    _write_page(flat / "b1.html", "导航", "正文")
    (flat / "b1.txt").write_text("正文", encoding="utf-8")

    pairs, missing = find_page_pairs([str(cwced)])
    assert pairs == [(cwced / "original" / "a1.html", cwced / "cleaned" / "a1.txt")]
    assert missing == [cwced / "original" / "a2.html"]
    pairs, missing = find_page_pairs([str(flat), str(tmp_path / "flat" / "*.html")])
    assert pairs == [(flat / "b1.html", flat / "b1.txt")] * 2 and missing == []
    with pytest.raises(ValueError, match="matches no page"):
        find_page_pairs([str(tmp_path / "nothing" / "*.html")])


def test_main_writes_loadable_lists(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pages = tmp_path / "pages"
    (pages / "original").mkdir(parents=True)
    (pages / "cleaned").mkdir()
    nav = "网站首页，新闻的频道，热门的推荐，今天是周末，网站的地图。"
    bodies = [body.replace(" ", "") for body in BODIES]
    for i, body in enumerate(bodies):
        _write_page(pages / "original" / f"p{i}.html", nav * 2, body, encoding="gbk" if i % 2 else "utf-8")
        (pages / "cleaned" / f"p{i}.txt").write_text(body, encoding="utf-8")
    stopwords = tmp_path / "stop.txt"
    stopwords.write_text("的\n在\n了\n是\n据\n此外\n和\n", encoding="utf-8")
    out = tmp_path / "out"
    code = main(
        ["--pages", str(pages), "--out", str(out), "--stopwords", str(stopwords), "--segmenter", "jieba",
         "--min-frequency", "2", "--basic-min-share", "0.05"]
    )  # fmt: skip
    assert code == 0
    printed = capsys.readouterr().out
    assert "pages read: 3" in printed and "的\t" in printed
    basic, optimized = load_antecedents(out / "basic.txt"), load_antecedents(out / "optimized.txt")
    assert basic == {"在", "了"} and optimized == {"据", "此外"}
    header = (out / "basic.txt").read_text(encoding="utf-8")
    assert header.startswith("# SpotSigs antecedents") and "t1/t2 > 0.6" in header


def test_main_reports_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["--pages", str(empty), "--out", str(tmp_path / "out")]) == 2
    assert "no page with a known text layer" in capsys.readouterr().err
    assert main(["--pages", str(empty), "--out", str(tmp_path), "--basic-ratio", "2"]) == 2
    with pytest.raises(SystemExit):
        main(["--out", str(tmp_path)])  # --pages is required


@pytest.mark.shared_data
def test_learn_on_cwced_reproduces_the_papers_basic_antecedents(
    shared_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--pages", str(shared_data / "cwced"), "--out", str(tmp_path)]) == 0
    table = {line.split("\t")[0]: line.split("\t")[1:] for line in capsys.readouterr().out.splitlines() if "\t" in line}
    for word in ("的", "在", "了", "是"):
        t1, t2, ratio = table[word]
        assert int(t1) > 900 and float(ratio) > 0.6  # the paper's criteria for basic antecedents
    basic, optimized = load_antecedents(tmp_path / "basic.txt"), load_antecedents(tmp_path / "optimized.txt")
    assert {"的", "在", "了", "是"} <= basic
    assert 150 <= len(basic | optimized) <= 260  # the paper: 211
    assert {"据", "此外"} <= optimized  # the paper's examples of optimized antecedents
