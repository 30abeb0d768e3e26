"""Measure article extraction on the shared real pages, so that the figures predict pages never seen.

:func:`evaluate_extraction` returns every figure as a dict (``newsdedup eval`` writes it into results.json).

**Text quality**: bag-of-jieba-tokens precision/recall/F1 (:func:`token_prf`: ``jieba.lcut`` tokens without
whitespace and punctuation/symbol-only tokens, as multisets), the unweighted mean over pages; a refused or
empty extraction scores 0 and is counted in ``empty``. Four readings of every page: ours one page at a time
(``ours``), ours with the site's template learned from other pages of the same portal (``ours_template``,
xmu-finance-news only), ``trafilatura.extract`` with its defaults (``trafilatura``) and in its precision
mode (``trafilatura_precision``, ``favor_precision=True``); trafilatura always gets the decoded HTML and
``deduplicate=False``.

**Gold**: ``cwced`` hand-copied text; ``xmu-finance-news`` hand-labelled node text (no title), per portal,
``clean`` = the pages its curators did not mark ``suspect`` (gold missing paragraphs or wrong), ``core`` = clean
pages against the gold without the lines a tenth or more of the portal's golds share (notices such as nbd's
copyright footer, kept by the curators, dropped by the extractor on purpose: derived from the gold files alone,
the same for every reading; the raw figures are reported beside it); ``small-zh-gold``
the CCTV page's hand-written gold without its first line (the headline: bodies exclude it) and the People
page's paragraphs as fundus's site parser gives them; ``readability-zh`` and ``newspaper-goose-zh`` other tools'
accepted output (sanity checks, not ground truth); ``trafilatura-zh`` must/must-not-contain snippets.

**Held out**: the extractor's rules and numbers were developed on :data:`DEVELOPMENT` (their failures looked
at, thresholds chosen there); every other gold set and xmu portal was only run to report, so its figure is
what a new portal should expect. Two held-out portals are split by page (:data:`PAGE_SPLIT`: odd page numbers
development, even held out); their halves are reported beside the whole (``page_split``), and the held-out figures
(the floors' units) still count each whole, as nothing was tuned on it. Templates are learned two-fold: each portal's pages in id order are split
into odd and even, and each half is read with the template the other half taught (no page teaches its own),
then judged as a crawl judges it (:meth:`~newsdedup.extract.template.SiteTemplate.check`, the crawl's own code):
a template failure is read again without the text the site's other pages carry, or stored as nothing (skipped),
so ``ours_template`` is what a crawl stores.
``target`` is the bar issue 10 sets: F1 >= 0.93 and >= trafilatura's precision mode + 0.03, or, where that
mode already reads above 0.95, >= 0.98 and above it.

**Related-reading leaks** over cwced, gne, trafilatura-zh, readability-zh and newspaper-goose-zh: a body leaks
when a line is a related-reading heading (:func:`~newsdedup.extract.related.is_related_heading`) or holds,
(nearly) alone, a headline listed under such a heading in the raw page (:func:`related_headlines`: the text,
8+ characters and 4+ CJK, of one of the first 15 list-item links after the heading within its block, and not
the page's own headline). **Metadata** on cwced: a date is right when every field the gold states matches,
an author when the sets of names are equal.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import csv
import gzip
import json
import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import lxml.html

from newsdedup.extract.decode import decode_html
from newsdedup.extract.extractor import SkipPage, extract_article
from newsdedup.extract.metadata import visible_text
from newsdedup.extract.related import RELATED_HEADINGS, is_related_heading, normalize_heading
from newsdedup.extract.template import SiteTemplate

__all__ = ["DEVELOPMENT", "bag_of_tokens", "evaluate_extraction", "find_leaks", "related_headlines", "token_prf"]

#: What the extractor was developed on: whole gold sets, and xmu-finance-news portals. The rest is held out.
DEVELOPMENT = {"cwced": None, "trafilatura-zh": None, "xmu-finance-news": ("cjw", "hexun", "nbd", "sina", "xinhua")}
#: Units that were held out and became development once their failures were looked at, with what they read while held
#: out: the figure a portal nobody had looked at gave, kept beside the one it reads now (report.md prints both).
FORMERLY_HELD_OUT = {
    "xmu-finance-news/people/development": "the whole portal read core F1 0.9872 with its site template while held out "
                                           "(target 0.98), at 11e2518; its odd pages (this half) were then looked at",
    "xmu-finance-news/wangyi/development": "the whole portal read core F1 0.9843 with its site template while held out "
                                           "(target 0.93), at 11e2518; its odd pages (this half) were then looked at",
    "xmu-finance-news/nbd": "core F1 0.9291 with its site template against a target of 0.9334 (precision mode 0.9034), "
                            "at 9e36baa; then looked at: a sign-off the site closes every article with, and an unlabelled "
                            "dateline opening the body",
}
#: Portals split in two by page, by a fixed rule (:func:`_page_half`): pages whose number (the name's last digits) is
#: odd are development, even ones stay held out. Held out whole until issue 26, whose extraction misses were looked for on
#: their odd pages only; the figure each portal read whole while held out is kept in :data:`FORMERLY_HELD_OUT`. Each
#: half is still read with the template the portal's other pages teach (two-fold, as every portal).
PAGE_SPLIT = {"xmu-finance-news": ("people", "wangyi")}
#: Other tools' output, not human gold: reported, never a target.
SANITY = ("readability-zh", "newspaper-goose-zh")
READINGS = ("ours", "ours_template", "trafilatura", "trafilatura_precision")
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


# ---------------------------------------------------------------------------------------- pages


@dataclass(frozen=True)
class GoldPage:
    """One page with gold text: its set, group (the portal for xmu-finance-news, else the set) and whether its
    gold is trusted (``clean``)."""

    set: str
    group: str
    name: str
    path: Path
    gold: str
    clean: bool = True
    core: str | None = None  # xmu-finance-news: the gold without the lines a tenth of its portal's golds share

    def html(self) -> bytes:
        data = self.path.read_bytes()
        return gzip.decompress(data) if self.path.suffix == ".gz" else data


def _read_text(path: Path) -> str:
    return path.read_bytes().decode("utf-8", errors="replace")


def _gold_pages(data: Path) -> list[GoldPage]:
    pages = []
    cwced = data / "cwced"
    for p in sorted((cwced / "original").glob("*.html")):
        if (cwced / "cleaned" / f"{p.stem}.txt").is_file():
            pages.append(GoldPage("cwced", "cwced", p.stem, p, _read_text(cwced / "cleaned" / f"{p.stem}.txt")))
    xmu = data / "xmu-finance-news"
    if (xmu / "quality.derived.tsv").is_file():
        with (xmu / "quality.derived.tsv").open(encoding="utf-8") as rows:
            xmu_rows = [(row, _read_text(xmu / "gold" / f"{row['id']}.txt")) for row in csv.DictReader(rows, delimiter="\t")]
        # Lines a tenth or more of a portal's golds share are the portal's notices (nbd's copyright footer, sina's
        # editor lines), which its curators kept and the extractor drops on purpose; no article repeats on as many.
        shared = collections.Counter((row["site"], line) for row, gold in xmu_rows
                                     for line in {normalize_heading(x) for x in gold.splitlines()} if line)
        portal_pages = collections.Counter(row["site"] for row, _ in xmu_rows)
        for row, gold in xmu_rows:
            core = "\n".join(x for x in gold.splitlines() if shared[row["site"], normalize_heading(x)] < 0.1 * portal_pages[row["site"]])
            pages.append(GoldPage("xmu-finance-news", row["site"], row["id"], xmu / "pages" / f"{row['id']}.html.gz",
                                  gold, row["suspect"] == "no", core))
    small = data / "small-zh-gold"
    for gold in sorted((small / "htmltotext-benchmark" / "gold").glob("*.txt")):
        lines = _read_text(gold).strip().splitlines()  # the first line is the headline
        pages.append(GoldPage("small-zh-gold", "small-zh-gold", gold.stem,
                              small / "htmltotext-benchmark" / "pages" / f"{gold.stem}.html", "\n".join(lines[1:])))
    if (small / "fundus" / "People.json").is_file():
        body = json.loads(_read_text(small / "fundus" / "People.json"))["V1"]["body"]
        paragraphs = [p for section in body["sections"] for p in section["paragraphs"]]
        pages.append(GoldPage("small-zh-gold", "small-zh-gold", "fundus-people",
                              small / "fundus" / "People_2024_04_24.html.gz", "\n".join(paragraphs)))
    for d in sorted((data / "readability-zh" / "test" / "test-pages").glob("*/")):
        if (d / "source.html").is_file() and (d / "expected.html").is_file():
            gold = visible_text(lxml.html.document_fromstring(_read_text(d / "expected.html")))
            pages.append(GoldPage("readability-zh", "readability-zh", d.name, d / "source.html", gold))
    n4k = data / "newspaper-goose-zh" / "newspaper4k" / "tests" / "data"
    for p in sorted((n4k / "html").glob("chinese_article*.html")):
        if (n4k / "txt" / f"{p.stem}.txt").is_file():
            pages.append(GoldPage("newspaper-goose-zh", "newspaper-goose-zh", p.stem, p, _read_text(n4k / "txt" / f"{p.stem}.txt")))
    goose = data / "newspaper-goose-zh" / "goose3" / "tests" / "data" / "content"
    if (goose / "test_bbc_chinese.json").is_file():
        expected = json.loads(_read_text(goose / "test_bbc_chinese.json"))["expected"]
        pages.append(GoldPage("newspaper-goose-zh", "newspaper-goose-zh", "goose3/test_bbc_chinese",
                              goose / "test_bbc_chinese.html", expected.get("cleaned_text", "")))
    return pages


def _leak_pages(data: Path) -> list[Path]:
    patterns = ("cwced/original/*.html", "gne/tests/*/*.html", "gne/visiable_test/*/*.html", "trafilatura-zh/tests/*/*.html",
                "readability-zh/test/test-pages/*/source.html", "newspaper-goose-zh/*/tests/data/*/*.html",
                "newspaper-goose-zh/*/tests/data/html/*.html")
    return sorted({p for pattern in patterns for p in data.glob(pattern)})


def _split(page: GoldPage) -> str:
    if page.set in SANITY:
        return "sanity"
    if page.group in PAGE_SPLIT.get(page.set, ()):
        return _page_half(page)
    if page.set not in DEVELOPMENT:
        return "held_out"
    portals = DEVELOPMENT[page.set]
    return "development" if portals is None or page.group in portals else "held_out"


def _page_half(page: GoldPage) -> str:
    """The half of a :data:`PAGE_SPLIT` portal a page is in: development for an odd page number, else held out."""
    digits = re.search(r"(\d+)$", page.name)
    return "development" if digits is not None and int(digits.group(1)) % 2 == 1 else "held_out"


# ---------------------------------------------------------------------------------------- readings


def _read(
    html: bytes, reading: str, template: tuple[frozenset[int], frozenset[int]] = (frozenset(), frozenset())
) -> dict:
    """One reading of one page: text (and for ours the metadata and block hashes); ``template``: the boilerplate and
    sign-offs of its site's template."""
    if reading.startswith("trafilatura"):
        import trafilatura

        text = trafilatura.extract(decode_html(html).text, deduplicate=False,
                                   favor_precision=reading == "trafilatura_precision") or ""
        return {"text": text}
    try:
        article = extract_article(html, min_chars=0, boilerplate=template[0], sign_offs=template[1])
    except SkipPage:
        return {"text": "", "title": None, "published_at": None, "author": None, "lines": [], "body": []}
    return {"text": article.text, "title": article.title, "published_at": article.published_at,
            "author": article.author, "lines": list(article.block_hashes), "body": list(article.body_hashes)}


def _job(job: tuple) -> dict:
    """A reading of a gold page (scored) or a leak page (checked); a top-level function for worker processes."""
    kind, path, reading, template, golds = job
    html = path.read_bytes() if path.suffix != ".gz" else gzip.decompress(path.read_bytes())
    result = _read(html, reading, template)
    if kind == "gold":
        result["prf"], result["core_prf"] = (token_prf(result["text"], gold) if gold is not None else None for gold in golds)
    else:
        result["leaks"] = find_leaks(result["text"], related_headlines(decode_html(html).text))
        result["heading_word"] = any(word in normalize_heading(result["text"]) for word in RELATED_HEADINGS)
    return result


def _run(jobs: Sequence[tuple], workers: int | None, progress: Callable[[str], None] | None) -> list[dict]:
    if workers == 0:
        results = map(_job, jobs)
        executor = None
    else:
        executor = concurrent.futures.ProcessPoolExecutor(workers)
        results = executor.map(_job, jobs, chunksize=4)
    out = []
    try:
        for job, result in zip(jobs, results):
            if progress:
                progress(f"{job[2]} {job[1].name}")
            out.append(result)
    finally:
        if executor is not None:
            executor.shutdown()
    return out


def _two_fold_templates(pages: Sequence[GoldPage], first: dict[str, dict]) -> dict[str, SiteTemplate]:
    """For each xmu page, the template its portal's other half of pages (odd/even in id order) teaches."""
    templates = {}
    by_portal = collections.defaultdict(list)
    for page in pages:
        by_portal[page.group].append(page)
    for portal_pages in by_portal.values():
        for fold in (0, 1):
            template = SiteTemplate()
            for n, page in enumerate(portal_pages):
                if n % 2 != fold:
                    reading = first[page.name]
                    template.learn(reading["lines"], reading["body"], title=reading["title"], texts=(reading["text"],))
            templates.update({page.name: template for n, page in enumerate(portal_pages) if n % 2 == fold})
    return templates


def _check_templates(pages: Sequence[GoldPage], templates: dict[str, SiteTemplate], results: list[dict]) -> dict[str, str]:
    """Judge each page's reading with its template as a crawl does (:meth:`SiteTemplate.check`: a template
    failure is read again without the site's shared text, or skipped), updating ``results`` (text and scores) to
    what the crawl stores; return the outcome for each page that was a template failure."""
    outcomes: dict[str, str] = {}

    async def check_all() -> None:
        for page, result in zip(pages, results):
            if not result["text"]:
                continue  # the crawl skips the page before any check

            async def reread(boilerplate: frozenset[int], lenient: bool, page: GoldPage = page):
                try:
                    article = extract_article(page.html(), boilerplate=boilerplate, keep_shared_prose=False,
                                              sign_offs=templates[page.name].sign_offs(),
                                              **({"min_chars": 0, "brief_chars": 0} if lenient else {}))
                except SkipPage:
                    return None, None
                return article, article.text

            check = await templates[page.name].check(page.name, result["title"], result["text"], reread)
            if check is not None:
                outcomes[page.name] = check.outcome
                result["text"] = check.reading.text if check.reading is not None else ""
                result["prf"], result["core_prf"] = (token_prf(result["text"], gold) if gold is not None else None
                                                     for gold in (page.gold, page.core))

    asyncio.run(check_all())
    return outcomes


# ---------------------------------------------------------------------------------------- scores


def _mean(values: Iterable[float]) -> float:
    values = list(values)
    return round(sum(values) / len(values), 4) if values else 0.0


def _summary(pages: Sequence[GoldPage], scores: dict[str, dict[str, tuple]], empty: dict[str, set[str]]) -> dict:
    """Mean P/R/F1 of every reading over ``pages``, the empty bodies of ours (the crawl's reading: with the
    template where there is one), and the target check."""
    summary: dict = {"pages": len(pages)}
    for reading, by_page in scores.items():
        rows = [by_page[p.name] for p in pages if p.name in by_page]
        if rows:
            summary[reading] = {m: _mean(r[i] for r in rows) for i, m in enumerate(("precision", "recall", "f1"))}
    ours = "ours_template" if "ours_template" in summary else "ours"
    summary["empty"] = sum(1 for p in pages if p.name in empty[ours])
    best = summary[ours]["f1"]
    if "trafilatura_precision" in summary:
        precision = summary["trafilatura_precision"]["f1"]
        summary["target"] = 0.98 if precision > 0.95 else round(max(0.93, precision + 0.03), 4)
        summary["meets_target"] = best >= summary["target"] and best > precision
    return summary


def evaluate_extraction(
    data_dir: Path | str,
    *,
    baseline: bool = True,
    sets: Iterable[str] | None = None,
    workers: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict:
    """Every extraction figure on ``data_dir`` (the shared data folder) as a JSON-serialisable dict.

    ``baseline=False`` skips trafilatura (no target check then); ``sets`` limits the gold pages to those sets
    or ``set/group`` entries (``"xmu-finance-news/people"``), and leaves out the leak check unless it holds
    ``"leaks"`` (None: everything); ``workers`` processes read the pages (None: one per core, 0: this process).
    """
    data = Path(data_dir)
    if not data.is_dir():
        raise ValueError(f"data directory {data} not found; pass --data pointing at shared/data")
    wanted = None if sets is None else set(sets)
    gold = [p for p in _gold_pages(data) if wanted is None or p.set in wanted or f"{p.set}/{p.group}" in wanted]
    leak_paths = _leak_pages(data) if wanted is None or "leaks" in wanted else []
    xmu = [p for p in gold if p.set == "xmu-finance-news"]
    readings = ["ours"] + (["trafilatura", "trafilatura_precision"] if baseline else [])
    none = (frozenset(), frozenset())
    jobs = [("gold", p.path, r, none, (p.gold, p.core)) for r in readings for p in gold]
    jobs += [("leak", path, "ours", none, None) for path in leak_paths]
    results = _run(jobs, workers, progress)
    first = {job[1]: result for job, result in zip(jobs, results) if job[2] == "ours" and job[0] == "gold"}
    by_name = {p.name: first[p.path] for p in gold}
    templates = _two_fold_templates(xmu, by_name)
    learned = {name: (template.boilerplate(), template.sign_offs()) for name, template in templates.items()}
    template_results = _run([("gold", p.path, "ours_template", learned[p.name], (p.gold, p.core)) for p in xmu],
                            workers, progress)
    template_outcomes = _check_templates(xmu, templates, template_results)
    name_of = {p.path: p.name for p in gold}
    scores: dict[str, dict[str, tuple]] = collections.defaultdict(dict)
    core_scores: dict[str, dict[str, tuple]] = collections.defaultdict(dict)
    empty: dict[str, set[str]] = collections.defaultdict(set)  # reading -> pages it read nothing from
    for (kind, path, reading, _, _), result in [*zip(jobs, results), *zip(
            [("gold", p.path, "ours_template", None, None) for p in xmu], template_results)]:
        if kind == "gold":
            scores[reading][name_of[path]] = result["prf"]
            if result["core_prf"] is not None:
                core_scores[reading][name_of[path]] = result["core_prf"]
            if not result["text"].strip():
                empty[reading].add(name_of[path])

    report: dict = {"development": {k: list(v) if v else "all" for k, v in DEVELOPMENT.items()},
                    "formerly_held_out": FORMERLY_HELD_OUT, "sets": {}}
    for set_name in dict.fromkeys(p.set for p in gold):
        pages = [p for p in gold if p.set == set_name]
        summary = {"split": _split(pages[0]) if set_name != "xmu-finance-news" else "portals", **_summary(pages, scores, empty)}
        if set_name == "xmu-finance-news":
            summary["clean"] = _summary([p for p in pages if p.clean], scores, empty)
            summary["portals"] = {}
            for portal in dict.fromkeys(p.group for p in pages):
                portal_pages = [p for p in pages if p.group == portal]
                halves = {}  # a PAGE_SPLIT portal: the whole, then each half a unit of its own
                if portal in PAGE_SPLIT.get(set_name, ()):
                    halves = {f"{portal}/{half}": [p for p in portal_pages if _page_half(p) == half]
                              for half in ("development", "held_out")}
                for unit, unit_pages in {portal: portal_pages, **halves}.items():
                    clean = [p for p in unit_pages if p.clean]
                    summary["portals"][unit] = {
                        # The whole portal keeps its split for the held-out figures (the floors' units); see _held_out.
                        "split": "held_out" if halves and unit == portal else _split(unit_pages[0]),
                        **_summary(unit_pages, scores, empty),
                        "clean": _summary(clean, scores, empty), "core": _summary(clean, core_scores, empty),
                        "template_failures": dict(collections.Counter(
                            template_outcomes[p.name] for p in unit_pages if p.name in template_outcomes))}
        if set_name in SANITY:
            summary.pop("target", None), summary.pop("meets_target", None)
        report["sets"][set_name] = summary
    report["held_out"] = _held_out(report["sets"])
    report["page_split"] = _page_split(report["sets"])
    report["pages"] = {p.name: {"set": p.set, **{r: round(scores[r][p.name][2], 4) for r in READINGS if p.name in scores[r]}}
                       for p in gold}
    report["metadata"] = _metadata(data, [p for p in gold if p.set == "cwced"], by_name)
    leak_results = {job[1]: result for job, result in zip(jobs, results) if job[0] == "leak"}
    report["leaks"] = {
        "pages": len(leak_paths),
        "leaking_pages": sum(1 for r in leak_results.values() if r["leaks"]),
        "heading_word_pages": sum(1 for r in leak_results.values() if r["heading_word"]),
        "details": [{"page": str(path.relative_to(data)), "leaks": r["leaks"][:5]} for path, r in leak_results.items() if r["leaks"]],
    }
    report["snippets"] = _snippets(data, readings) if wanted is None or "trafilatura-zh" in wanted else {}
    return report


def _held_out(sets: dict) -> dict:
    """The held-out gold sets and portals: how many meet the target, the lowest F1, empty bodies."""
    units = {name: s for name, s in sets.items() if s["split"] == "held_out"}
    # A PAGE_SPLIT portal counts whole, as it was held out (only its development half was looked at, and no rule
    # was changed for what was found there: gold conventions); its halves are reported beside it (page_split).
    units.update({f"xmu-finance-news/{name}": s["core"] for name, s in sets.get("xmu-finance-news", {}).get("portals", {}).items()
                  if s["split"] == "held_out" and "/" not in name})
    if not units:
        return {}
    figures = {name: s.get("ours_template", s["ours"])["f1"] for name, s in units.items()}
    return {"units": sorted(units), "meeting_target": sum(1 for s in units.values() if s.get("meets_target")),
            "min_f1": min(figures.values()), "empty": sum(s["empty"] for s in units.values()), "f1": figures}


def _page_split(sets: dict) -> dict:
    """Each :data:`PAGE_SPLIT` portal's core F1 with its site template (what a crawl stores): the whole portal, its
    development half and its held-out half, side by side, with the figure it read while held out whole."""
    portals = sets.get("xmu-finance-news", {}).get("portals", {})
    return {portal: {"whole": portals[portal]["core"].get("ours_template", {}).get("f1"),
                     **{half: portals[f"{portal}/{half}"]["core"].get("ours_template", {}).get("f1")
                        for half in ("development", "held_out")},
                     "pages": {half: portals[f"{portal}/{half}"]["core"]["pages"] for half in ("development", "held_out")},
                     "formerly_held_out": FORMERLY_HELD_OUT.get(f"xmu-finance-news/{portal}/development")}
            for portal in PAGE_SPLIT.get("xmu-finance-news", ()) if portal in portals}


def _metadata(data: Path, pages: Sequence[GoldPage], ours: dict[str, dict]) -> dict:
    if not pages:
        return {}
    dates = authors = overlap = dated = dated_ok = 0
    misses = []
    for page in pages:
        result = ours[page.name]
        gold_date = _gold_date(_read_text(data / "cwced" / "date" / f"{page.name}.txt"))
        ok = _date_correct(result["published_at"], gold_date)
        dates += ok
        dated += gold_date is not None
        dated_ok += ok and gold_date is not None
        gold_names, names = _names(_read_text(data / "cwced" / "author" / f"{page.name}.txt")), _names(result["author"])
        authors += gold_names == names
        overlap += (gold_names == names) or bool(gold_names & names)
        if not ok or gold_names != names:
            misses.append({"page": page.name[:8], "date": result["published_at"], "gold_date": gold_date,
                           "author": result["author"], "gold_author": " ".join(sorted(gold_names)) or None})
    n = len(pages)
    return {"pages": n, "date_accuracy": round(dates / n, 4), "date_accuracy_dated_pages": round(dated_ok / max(dated, 1), 4),
            "author_accuracy": round(authors / n, 4), "author_overlap": round(overlap / n, 4), "misses": misses}


def _gold_date(text: str) -> tuple[int, ...] | None:
    numbers = [int(n) for n in re.findall(r"\d+", text)]
    return tuple(numbers[:6]) if numbers and 1990 <= numbers[0] <= 2100 else None


def _date_correct(predicted: str | None, gold: tuple[int, ...] | None) -> bool:
    """Every date field the gold states matches (and no date where the gold has none)."""
    fields = tuple(int(n) for n in re.findall(r"\d+", predicted or "")[:6]) or None
    return fields is None if gold is None else fields is not None and fields[: len(gold)] == gold


def _names(text: str | None) -> set[str]:
    if not text or text.strip().upper() in ("UNKNOWN", "UNKNWON"):
        return set()
    return {n.lower() for n in re.split(r"[\s、,，()（）]+", text) if n}


def _snippets(data: Path, readings: Sequence[str]) -> dict:
    gold_path = data / "trafilatura-zh" / "evaldata_zh.derived.json"
    if not gold_path.is_file():
        return {}
    result: dict = {r: {"passed": 0, "total": 0} for r in readings} | {"failures": []}
    for entry in json.loads(_read_text(gold_path)).values():
        matches = list((data / "trafilatura-zh" / "tests").glob(f"*/{entry['file']}"))
        if not matches:
            continue
        for reading in readings:
            body = _read(matches[0].read_bytes(), reading)["text"]
            checks = [("must_contain", s, s in body) for s in entry.get("with", [])]
            checks += [("must_not_contain", s, s not in body) for s in entry.get("without", [])]
            for check, snippet, ok in checks:
                result[reading]["total"] += 1
                result[reading]["passed"] += ok
                if not ok:
                    result["failures"].append({"extractor": reading, "file": entry["file"], check: snippet})
    return result


# ---------------------------------------------------------------------------------------- leaks


def _block_of(el):
    node = el
    while node is not None and node.tag in ("a", "span", "font", "b", "strong", "em", "i", "h3", "h4"):
        node = node.getparent()
    return node if node is not None else el


def related_headlines(html: str) -> set[str]:
    """Normalized headline texts listed under related-reading headings in the raw page."""
    root = lxml.html.document_fromstring(re.sub(r"^\s*<\?xml[^>]*\?>", "", html))
    # The article's own headline often sits in the site's ranking lists too: that is no leak.
    own_titles = [normalize_heading(el.text_content()) for el in root.iter("title", "h1")]
    own_titles += [normalize_heading(m.get("content") or "") for m in root.iter("meta")
                   if (m.get("property") or m.get("name") or "").lower() in ("og:title", "twitter:title")]
    own_titles = [t for t in own_titles if t]
    headlines: set[str] = set()
    for el in root.iter():
        if not isinstance(el.tag, str) or el.tag in ("script", "style", "title", "head"):
            continue
        if not any(piece and is_related_heading(piece) for piece in [el.text] + [child.tail for child in el]):
            continue
        container = el  # the block the heading opens: its nearest ancestor (up to 4 levels) holding links
        for _ in range(4):
            if sum(1 for _ in container.iter("a")) >= 2 or container.getparent() is None:
                break
            container = container.getparent()
        position = {node: i for i, node in enumerate(container.iter())}  # the dict keeps each proxy alive
        start = position.get(el, 0)
        followers = [a for a in container.iter("a") if position[a] > start][:_LEAK_LINKS_AFTER_HEADING]
        for follower in followers:
            text = normalize_heading(follower.text_content())
            block = normalize_heading(_block_of(follower).text_content())
            if (len(text) >= _MIN_HEADLINE_CHARS and len(_CJK.findall(text)) >= 4  # a headline, not a URL
                    and len(block) <= 1.5 * len(text) + 20 and not any(text in title for title in own_titles)):
                headlines.add(text)
    return headlines


def find_leaks(body: str, headlines: Iterable[str]) -> list[str]:
    """What in ``body`` is related-reading material: heading lines and listed headlines standing (nearly)
    alone on a line (inside a longer sentence the same words are the article quoting the same fact)."""
    leaks = [line.strip() for line in body.splitlines() if line.strip() and is_related_heading(line)]
    lines = [normalize_heading(line) for line in body.splitlines()]
    for headline in headlines:
        if any(headline in line and len(line) <= 1.5 * len(headline) + 10 for line in lines):
            leaks.append(headline)
    return leaks


# ---------------------------------------------------------------------------------------- output


def summarise(report: dict) -> dict:
    """The figures results.json keeps (the floors' paths: ``cwced.f1``, ``held_out.min_f1``, ``leaks.leaking``...)."""
    cwced, metadata, snippets = report["sets"].get("cwced", {}), report.get("metadata", {}), report.get("snippets", {})
    return {
        "cwced": {**cwced.get("ours", {}), "pages": cwced.get("pages", 0),
                  "date_accuracy": metadata.get("date_accuracy"), "author_accuracy": metadata.get("author_accuracy")},
        "held_out": report["held_out"],
        "page_split": report.get("page_split", {}),
        "development": report["development"],
        "formerly_held_out": report.get("formerly_held_out", {}),
        "sets": report["sets"],
        "leaks": {"pages": report["leaks"]["pages"], "leaking": report["leaks"]["leaking_pages"],
                  "details": report["leaks"]["details"]},
        "snippets": {"passed": snippets.get("ours", {}).get("passed", 0), "total": snippets.get("ours", {}).get("total", 0),
                     **{f"{r}_passed": snippets[r]["passed"] for r in READINGS[2:] if r in snippets},
                     "failures": snippets.get("failures", [])},
        "metadata_misses": len(metadata.get("misses", [])),
    }


def format_markdown(ex: dict) -> list[str]:
    """The extraction section of report.md from :func:`summarise`'s figures."""
    def f1(summary: dict, reading: str) -> str:
        return f"{summary[reading]['f1']:.3f}" if reading in summary else "-"

    lines = ["## Extraction", "", "Bag-of-jieba-tokens F1, mean over pages (`newsdedup.evaluation.extraction`). "
             "*development*: the rules and numbers were chosen looking at these pages; *held out*: only run to report. "
             "xmu-finance-news portals: ours with the template learned on the portal's other half of pages; "
             "*clean*: without the pages its curators marked suspect; *core*: clean pages against the gold without the "
             "lines a tenth of the portal's golds share (its notices); the targets apply to core.", "",
             "| set | split | pages | ours | ours + site template | trafilatura | trafilatura precision | target | met | empty |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    rows = [(name, s) for name, s in ex["sets"].items() if name != "xmu-finance-news"]
    for portal, s in ex["sets"].get("xmu-finance-news", {}).get("portals", {}).items():
        rows += [(f"xmu/{portal}", s), *((f"xmu/{portal} {k}", {**s[k], "split": s["split"]}) for k in ("clean", "core"))]
    for name, s in rows:
        met = {True: "yes", False: "**no**"}.get(s.get("meets_target"), "")
        lines.append(f"| {name} | {s['split']} | {s['pages']} | {f1(s, 'ours')} | {f1(s, 'ours_template')} | "
                     f"{f1(s, 'trafilatura')} | {f1(s, 'trafilatura_precision')} | {s.get('target', '')} | {met} | {s['empty']} |")
    failures = {portal: s.get("template_failures", {}) for portal, s in ex["sets"].get("xmu-finance-news", {}).get("portals", {}).items()
                if "/" not in portal}  # a split portal's halves: counted in the whole
    if failures:
        lines += ["", "Template failures of ours + site template (judged and read again as a crawl does): " + "; ".join(
            f"{portal} {sum(f.values())}" + (f" ({', '.join(f'{n} {k}' for k, n in sorted(f.items()))})" if f else "")
            for portal, f in failures.items()) + "."]
    held, cw, snippets = ex["held_out"], ex["cwced"], ex["snippets"]
    lines += ["", f"Held out: {held.get('meeting_target')} of {len(held.get('units', []))} sets and portals meet the target, "
              f"lowest F1 {held.get('min_f1')}, {held.get('empty')} empty bodies. trafilatura-zh snippets: ours "
              f"{snippets['passed']}/{snippets['total']}, trafilatura {snippets.get('trafilatura_passed')}, precision mode "
              f"{snippets.get('trafilatura_precision_passed')}. cwced date accuracy {cw.get('date_accuracy')}, author accuracy "
              f"{cw.get('author_accuracy')}. Pages leaking related-reading text: **{ex['leaks']['leaking']}** of "
              f"{ex['leaks']['pages']}.", ""]
    if split := ex.get("page_split"):
        lines += ["Portals split by page (odd page numbers development, even held out; core F1 with the site template): "
                  + "; ".join(f"{portal} whole {s['whole']}, development half {s['development']} ({s['pages']['development']} "
                              f"clean pages), held-out half {s['held_out']} ({s['pages']['held_out']})"
                              for portal, s in split.items()) + ".", ""]
    formerly = ex.get("formerly_held_out", {})
    if formerly:
        lines += ["Development units that were held out first, as they read then (what an unseen portal gave): "
                  + "; ".join(f"{unit}: {figure}" for unit, figure in formerly.items()) + ".", ""]
    return lines
