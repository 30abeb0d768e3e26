"""Measure article extraction on the shared real pages: text F1, metadata accuracy, related-reading leaks.

Run ``python -m newsdedup.evaluation.extraction --data ../shared/data`` (prints a report, writes nothing;
``--json`` prints the dict instead). :func:`evaluate_extraction` returns the same figures as a dict.

Text quality: bag-of-jieba-tokens precision/recall/F1. Both texts are segmented with ``jieba.lcut``
(default dictionary, precise mode, HMM on); tokens are stripped of whitespace and dropped when empty or
made only of punctuation, symbols, separators or control characters (Unicode categories P*, S*, Z*, C*).
Precision = |pred ∩ gold| / |pred| and recall = |pred ∩ gold| / |gold| over token MULTISETS (min counts),
F1 their harmonic mean; a page whose extraction is refused (SkipPage) or empty scores 0. Reported per set and
as the unweighted mean over pages, for our :func:`~newsdedup.extract.extractor.extract_article` and for
plain ``trafilatura.extract(html, deduplicate=False)`` on the same decoded HTML.

Gold per set: ``cwced`` hand-copied texts (the target); ``readability-zh`` Readability.js's expected
article (tags stripped); ``newspaper-goose-zh`` newspaper4k's expected texts and goose3's
``cleaned_text`` (other tools' accepted output: sanity checks, not ground truth).

Metadata on cwced: date accuracy = every field the gold states (year, month, day, hour, minute, second)
equals ours, and "no date" when the gold is UNKNOWN or not a date; author accuracy = the set of gold
names (split at spaces, 、 and commas) equals ours (``author_overlap`` counts any shared name), and
"no author" when the gold is UNKNOWN.

Related-reading leaks, over cwced, gne (tests/ and visiable_test/), trafilatura-zh, readability-zh and
newspaper-goose-zh: a body leaks when (a) one of its lines is a related-reading heading
(:func:`~newsdedup.extract.related.is_related_heading`, e.g. "相关阅读：", "24小时排行") or (b) it contains a
headline listed under such a heading in the raw page (the text, 8+ characters, of one of the first 15 links
that follow the heading inside its block, the heading's nearest ancestor (up to 4 levels) holding links, when the link is a list item rather than a link inside running text,
has 4+ CJK characters, and is not the page's own headline, which ranking lists often repeat) standing
(nearly) alone on a line of the body (within a longer sentence it is the article quoting the same fact).
``heading_word_pages`` also counts bodies containing any heading word anywhere (running text may use
words such as 排行 legitimately, so that figure is informational).
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import sys
import unicodedata
from collections.abc import Callable, Iterable
from pathlib import Path

import lxml.html

from newsdedup.extract.decode import decode_html
from newsdedup.extract.extractor import SkipPage, extract_article
from newsdedup.extract.metadata import visible_text
from newsdedup.extract.related import RELATED_HEADINGS, is_related_heading, normalize_heading

__all__ = [
    "bag_of_tokens",
    "token_prf",
    "evaluate_extraction",
    "format_report",
    "main",
]

_LEAK_LINKS_AFTER_HEADING = 15
_MIN_HEADLINE_CHARS = 8
_CJK = re.compile(r"[\u4e00-\u9fff]")


def _jieba():
    import jieba

    jieba.setLogLevel(60)  # its dictionary-loading chatter goes to stderr otherwise
    return jieba


def bag_of_tokens(text: str) -> collections.Counter[str]:
    """Multiset of jieba tokens of ``text`` without whitespace and punctuation/symbol-only tokens."""
    counts: collections.Counter[str] = collections.Counter()
    for token in _jieba().lcut(text or ""):
        token = token.strip()
        if token and not all(unicodedata.category(ch)[0] in "PSZC" for ch in token):
            counts[token] += 1
    return counts


def token_prf(predicted: str, gold: str) -> tuple[float, float, float]:
    """Bag-of-jieba-tokens (precision, recall, F1) of ``predicted`` against ``gold``.

    >>> token_prf("今天北京下雨。", "今天北京下雨")
    (1.0, 1.0, 1.0)
    """
    pred, ref = bag_of_tokens(predicted), bag_of_tokens(gold)
    overlap = sum((pred & ref).values())
    precision = overlap / sum(pred.values()) if pred else 0.0
    recall = overlap / sum(ref.values()) if ref else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


# ---------------------------------------------------------------- data sets


def _read_text(path: Path) -> str:
    return path.read_bytes().decode("utf-8", errors="replace")


def _html_text(html: str) -> str:
    return visible_text(lxml.html.document_fromstring(html))


def _text_pages(data: Path) -> dict[str, list[dict]]:
    """Pages with gold main text, per set: {"name", "path", "gold"}."""
    sets: dict[str, list[dict]] = {}
    cwced = data / "cwced"
    if (cwced / "original").is_dir():
        sets["cwced"] = [
            {"name": p.stem, "path": p, "gold": _read_text(cwced / "cleaned" / f"{p.stem}.txt")}
            for p in sorted((cwced / "original").glob("*.html"))
            if (cwced / "cleaned" / f"{p.stem}.txt").is_file()
        ]
    readability = data / "readability-zh" / "test" / "test-pages"
    if readability.is_dir():
        sets["readability-zh"] = [
            {"name": d.name, "path": d / "source.html", "gold": _html_text(_read_text(d / "expected.html"))}
            for d in sorted(readability.iterdir())
            if (d / "source.html").is_file() and (d / "expected.html").is_file()
        ]
    ng = data / "newspaper-goose-zh"
    pages = []
    n4k = ng / "newspaper4k" / "tests" / "data"
    for html in sorted((n4k / "html").glob("chinese_article*.html")) if n4k.is_dir() else []:
        txt = n4k / "txt" / f"{html.stem}.txt"
        if txt.is_file():
            pages.append({"name": f"newspaper4k/{html.stem}", "path": html, "gold": _read_text(txt)})
    goose = ng / "goose3" / "tests" / "data" / "content"
    if (goose / "test_bbc_chinese.html").is_file():
        expected = json.loads(_read_text(goose / "test_bbc_chinese.json"))["expected"]
        pages.append({"name": "goose3/test_bbc_chinese", "path": goose / "test_bbc_chinese.html",
                      "gold": expected.get("cleaned_text", "")})
    if pages:
        sets["newspaper-goose-zh"] = pages
    return sets


def _leak_pages(data: Path) -> list[Path]:
    paths: list[Path] = []
    paths += sorted((data / "cwced" / "original").glob("*.html"))
    paths += sorted((data / "gne" / "tests").glob("*/*.html"))
    paths += sorted((data / "gne" / "visiable_test").glob("*/*.html"))
    paths += sorted((data / "trafilatura-zh" / "tests").glob("*/*.html"))
    paths += sorted((data / "readability-zh" / "test" / "test-pages").glob("*/source.html"))
    paths += sorted((data / "newspaper-goose-zh").glob("*/tests/data/*/*.html"))
    paths += sorted((data / "newspaper-goose-zh").glob("*/tests/data/html/*.html"))
    return sorted(set(paths))


# ---------------------------------------------------------------- extractors


def _ours(path: Path) -> str:
    try:
        return extract_article(path.read_bytes(), min_chars=0).text
    except SkipPage:
        return ""


def _plain_trafilatura(path: Path) -> str:
    import trafilatura

    html = decode_html(path.read_bytes()).text
    return trafilatura.extract(html, deduplicate=False) or ""


# ---------------------------------------------------------------- leaks


def _block_of(el):
    node = el
    while node is not None and node.tag in ("a", "span", "font", "b", "strong", "em", "i", "h3", "h4"):
        node = node.getparent()
    return node if node is not None else el


def related_headlines(html: str) -> set[str]:
    """Normalized headline texts listed under related-reading headings in the raw page."""
    root = lxml.html.document_fromstring(re.sub(r"^\s*<\?xml[^>]*\?>", "", html))
    elements = [el for el in root.iter() if isinstance(el.tag, str)]
    # The article's own headline often sits in the site's ranking lists too: that is no leak.
    own_titles = [normalize_heading(el.text_content()) for el in root.iter("title", "h1")]
    own_titles += [normalize_heading(m.get("content") or "") for m in root.iter("meta")
                   if (m.get("property") or m.get("name") or "").lower() in ("og:title", "twitter:title")]
    own_titles = [t for t in own_titles if t]
    headlines: set[str] = set()
    for el in elements:
        if el.tag in ("script", "style", "title", "head"):
            continue
        pieces = [el.text] + [child.tail for child in el]
        if not any(piece and is_related_heading(piece) for piece in pieces):
            continue
        # The block the heading opens: its nearest ancestor (up to 4 levels) that holds links.
        container = el
        for _ in range(4):
            if sum(1 for _ in container.iter("a")) >= 2 or container.getparent() is None:
                break
            container = container.getparent()
        links = [a for a in container.iter("a")]
        position = {id(node): i for i, node in enumerate(container.iter())}
        start = position.get(id(el), 0)
        followers = [a for a in links if position[id(a)] > start][:_LEAK_LINKS_AFTER_HEADING]
        for follower in followers:
            text = normalize_heading(follower.text_content())
            block = normalize_heading(_block_of(follower).text_content())
            if (
                len(text) >= _MIN_HEADLINE_CHARS
                and len(_CJK.findall(text)) >= 4  # a headline, not a URL or an e-mail address
                and len(block) <= 1.5 * len(text) + 20
                and not any(text in title for title in own_titles)
            ):
                headlines.add(text)
    return headlines


def find_leaks(body: str, headlines: Iterable[str]) -> list[str]:
    """What in ``body`` is related-reading material: heading lines and listed headlines."""
    leaks = [line.strip() for line in body.splitlines() if line.strip() and is_related_heading(line)]
    # A listed headline leaks when it stands (nearly) alone on a line; the same words inside a longer
    # sentence are the article quoting the same fact.
    lines = [normalize_heading(line) for line in body.splitlines()]
    for headline in headlines:
        if any(headline in line and len(line) <= 1.5 * len(headline) + 10 for line in lines):
            leaks.append(headline)
    return leaks


# ---------------------------------------------------------------- metadata gold


def _gold_date(text: str) -> tuple[int, ...] | None:
    numbers = [int(n) for n in re.findall(r"\d+", text)]
    if not numbers or not 1990 <= numbers[0] <= 2100:
        return None
    return tuple(numbers[:6])


def _date_fields(iso: str | None) -> tuple[int, ...] | None:
    if not iso:
        return None
    return tuple(int(n) for n in re.findall(r"\d+", iso)[:6])


def _date_correct(pred: str | None, gold: tuple[int, ...] | None) -> bool:
    fields = _date_fields(pred)
    if gold is None:
        return fields is None
    return fields is not None and fields[: len(gold)] == gold


def _names(text: str | None) -> set[str]:
    if not text or text.strip().upper() in ("UNKNOWN", "UNKNWON"):
        return set()
    return {n.lower() for n in re.split(r"[\s、,，()（）]+", text) if n}


# ---------------------------------------------------------------- main evaluation


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def evaluate_extraction(
    data_dir: Path | str, *, baseline: bool = True, progress: Callable[[str], None] | None = None
) -> dict:
    """Run every measure on ``data_dir`` (the shared data folder); returns a JSON-serialisable dict.

    ``baseline=False`` skips plain trafilatura (its figures are then reported as None).
    """
    data = Path(data_dir)
    if not data.is_dir():
        raise ValueError(f"data directory {data} not found; pass --data pointing at shared/data")
    report: dict = {"sets": {}, "pages": {}}
    all_ours: list[float] = []
    all_plain: list[float] = []
    for set_name, pages in _text_pages(data).items():
        rows = []
        for page in pages:
            if progress:
                progress(f"{set_name}/{page['name']}")
            ours = token_prf(_ours(page["path"]), page["gold"])
            plain = token_prf(_plain_trafilatura(page["path"]), page["gold"]) if baseline else (0.0, 0.0, 0.0)
            rows.append({"page": page["name"], "ours": ours, "trafilatura": plain})
        summary = {"pages": len(rows)}
        for key in ("ours", "trafilatura"):
            summary[key] = {
                metric: round(_mean([row[key][i] for row in rows]), 4)
                for i, metric in enumerate(("precision", "recall", "f1"))
            }
        if not baseline:
            summary["trafilatura"] = None
        report["sets"][set_name] = summary
        report["pages"][set_name] = [
            {"page": r["page"], "ours_f1": round(r["ours"][2], 4), "trafilatura_f1": round(r["trafilatura"][2], 4)}
            for r in rows
        ]
        all_ours += [r["ours"][2] for r in rows]
        all_plain += [r["trafilatura"][2] for r in rows]
    report["mean_f1_all_pages"] = {
        "ours": round(_mean(all_ours), 4),
        "trafilatura": round(_mean(all_plain), 4) if baseline else None,
    }
    report["metadata"] = _evaluate_metadata(data)
    report["leaks"] = _evaluate_leaks(data, progress)
    report["snippets"] = _evaluate_snippets(data, baseline=baseline)
    return report


def _evaluate_metadata(data: Path) -> dict:
    cwced = data / "cwced"
    if not (cwced / "original").is_dir():
        return {}
    dates = authors = overlap = n = dated = dated_ok = 0
    misses = []
    for path in sorted((cwced / "original").glob("*.html")):
        try:
            article = extract_article(path.read_bytes(), min_chars=0)
            published, author = article.published_at, article.author
        except SkipPage:
            published = author = None
        n += 1
        gold_date = _gold_date(_read_text(cwced / "date" / f"{path.stem}.txt"))
        ok = _date_correct(published, gold_date)
        dates += ok
        if gold_date is not None:
            dated += 1
            dated_ok += ok
        gold_names, names = _names(_read_text(cwced / "author" / f"{path.stem}.txt")), _names(author)
        authors += gold_names == names
        overlap += (gold_names == names) or bool(gold_names & names)
        if not ok or gold_names != names:
            misses.append({"page": path.stem[:8], "date": published, "gold_date": gold_date, "author": author,
                           "gold_author": " ".join(sorted(gold_names)) or None})
    return {
        "pages": n,
        "date_accuracy": round(dates / n, 4) if n else 0.0,
        "date_accuracy_dated_pages": round(dated_ok / dated, 4) if dated else 0.0,
        "author_accuracy": round(authors / n, 4) if n else 0.0,
        "author_overlap": round(overlap / n, 4) if n else 0.0,
        "misses": misses,
    }


def _evaluate_leaks(data: Path, progress: Callable[[str], None] | None) -> dict:
    pages = leaking = word_pages = 0
    details = []
    for path in _leak_pages(data):
        if progress:
            progress(f"leaks {path}")
        html = decode_html(path.read_bytes()).text
        body = _ours(path)
        pages += 1
        leaks = find_leaks(body, related_headlines(html))
        if leaks:
            leaking += 1
            details.append({"page": str(path.relative_to(data)), "leaks": leaks[:5]})
        norm = normalize_heading(body)
        word_pages += any(word in norm for word in RELATED_HEADINGS)
    return {"pages": pages, "leaking_pages": leaking, "heading_word_pages": word_pages, "details": details}


def _evaluate_snippets(data: Path, *, baseline: bool = True) -> dict:
    gold_path = data / "trafilatura-zh" / "evaldata_zh.derived.json"
    if not gold_path.is_file():
        return {}
    gold = json.loads(_read_text(gold_path))
    result = {"ours": {"passed": 0, "total": 0}, "trafilatura": {"passed": 0, "total": 0}, "failures": []}
    for entry in gold.values():
        matches = list((data / "trafilatura-zh" / "tests").glob(f"*/{entry['file']}"))
        if not matches:
            continue
        extractors = [("ours", _ours)] + ([("trafilatura", _plain_trafilatura)] if baseline else [])
        for key, extractor in extractors:
            body = extractor(matches[0])
            for snippet in entry.get("with", []):
                ok = snippet in body
                result[key]["total"] += 1
                result[key]["passed"] += ok
                if not ok:
                    result["failures"].append({"extractor": key, "file": entry["file"], "must_contain": snippet})
            for snippet in entry.get("without", []):
                ok = snippet not in body
                result[key]["total"] += 1
                result[key]["passed"] += ok
                if not ok:
                    result["failures"].append({"extractor": key, "file": entry["file"], "must_not_contain": snippet})
    return result


def format_report(report: dict) -> str:
    """The evaluation dict as a short plain-text report."""
    lines = ["Extraction quality (bag-of-jieba-tokens, mean over pages)", ""]
    lines.append(f"{'set':<20}{'pages':>6}  {'ours P/R/F1':<22}{'trafilatura P/R/F1':<22}")
    for name, summary in report["sets"].items():
        ours, plain = summary["ours"], summary["trafilatura"]
        plain_text = f"{plain['precision']:.3f}/{plain['recall']:.3f}/{plain['f1']:.3f}" if plain else "-"
        lines.append(
            f"{name:<20}{summary['pages']:>6}  "
            f"{ours['precision']:.3f}/{ours['recall']:.3f}/{ours['f1']:.3f}      {plain_text}"
        )
    mean = report["mean_f1_all_pages"]
    plain_mean = f"{mean['trafilatura']:.3f}" if mean["trafilatura"] is not None else "-"
    lines.append(f"{'all pages':<20}{'':>6}  F1 {mean['ours']:.3f}              F1 {plain_mean}")
    meta = report.get("metadata") or {}
    if meta:
        lines += ["", f"cwced metadata ({meta['pages']} pages): date accuracy {meta['date_accuracy']:.3f} "
                  f"(dated pages {meta['date_accuracy_dated_pages']:.3f}), author accuracy "
                  f"{meta['author_accuracy']:.3f} (any shared name {meta['author_overlap']:.3f})"]
    leaks = report["leaks"]
    lines += ["", f"related-reading leaks: {leaks['leaking_pages']} of {leaks['pages']} pages "
              f"(bodies containing a heading word anywhere: {leaks['heading_word_pages']})"]
    for detail in leaks["details"][:10]:
        lines.append(f"  {detail['page']}: {detail['leaks']}")
    snippets = report.get("snippets") or {}
    if snippets:
        lines += ["", "trafilatura-zh snippet checks: ours {}/{}, trafilatura {}/{}".format(
            snippets["ours"]["passed"], snippets["ours"]["total"],
            snippets["trafilatura"]["passed"], snippets["trafilatura"]["total"])]
        for failure in snippets["failures"]:
            lines.append(f"  {failure}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m newsdedup.evaluation.extraction", description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"), help="the shared data folder")
    parser.add_argument("--json", action="store_true", help="print the full result as JSON")
    parser.add_argument("--pages", action="store_true", help="also list per-page F1 and metadata misses")
    parser.add_argument("--no-baseline", action="store_true", help="skip the plain-trafilatura comparison")
    args = parser.parse_args(argv)
    try:
        report = evaluate_extraction(args.data, baseline=not args.no_baseline)
    except ValueError as exc:
        parser.error(str(exc))
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=1))
        return 0
    print(format_report(report))
    if args.pages:
        for set_name, rows in report["pages"].items():
            print(f"\n{set_name}")
            for row in rows:
                print(f"  {row['page'][:40]:<42}ours {row['ours_f1']:.3f}  trafilatura {row['trafilatura_f1']:.3f}")
        meta = report.get("metadata") or {}
        for miss in meta.get("misses", []):
            print(f"  metadata miss {miss}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
