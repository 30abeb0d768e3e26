"""``newsdedup eval``: every quality measure of the project in one reproducible run.

    newsdedup eval --data ../shared/data --out eval-report [--check-floors]

1. **Extraction** (:mod:`newsdedup.evaluation.extraction`): bag-of-jieba-tokens P/R/F1 on ``cwced`` gold
   against plain trafilatura, date and author accuracy, trafilatura-zh snippet checks, related-reading leaks.
2. **Text level**: the seeded reprint benchmark (:mod:`newsdedup.evaluation.reprints`) through every
   method of :mod:`newsdedup.evaluation.methods` (the product's, with the papers' and tuned parameters,
   and the baselines): pairwise P/R/F1, recall by kind and edit band, hard-negative false positives,
   exact-repeat detection, ms per document.
3. **Page level** (:mod:`newsdedup.evaluation.page_level`): the benchmark texts in real page shells,
   served on 127.0.0.1 and crawled once through the real spider and pipelines with the default method;
   the other methods are then scored on the texts that crawl extracted (same extraction, their dedup).
4. **The papers' experiments** (:mod:`newsdedup.evaluation.experiments`), each a table and a PNG.

Writes ``results.json``, ``report.md`` and the plots into ``--out``, prints a summary, and with
``--check-floors`` compares the figures with ``config/quality_floors.toml`` (exit status 1 below a floor).
Everything is seeded: the same data and code give the same figures (timings aside).
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import platform
import time
from collections.abc import Mapping, Sequence
from pathlib import Path


__all__ = ["STAGES", "format_markdown", "format_summary", "run_evaluation"]

STAGES = ("extraction", "text", "pages", "experiments")
DEFAULT_PAGE_DOCS = 1500


class _Progress:
    """A tqdm bar per stage (tqdm is an evaluation dependency); plain lines when it is missing."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self._bar = None

    def stage(self, name: str, total: int | None = None) -> None:
        self.close()
        if not self.enabled:
            return
        try:
            from tqdm import tqdm
        except ImportError:
            print(f"[eval] {name}", flush=True)
            return
        self._bar = tqdm(total=total, desc=f"{name:<12}", unit="step", dynamic_ncols=True, leave=True)

    def step(self, label: str = "", n: int = 1) -> None:
        if self._bar is not None:
            self._bar.set_postfix_str(label[-40:], refresh=False)
            self._bar.update(n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


def _extraction(data_dir: Path, progress: _Progress, workers: int | None) -> dict:
    from newsdedup.evaluation.extraction import evaluate_extraction, summarise

    progress.stage("extraction")
    return summarise(evaluate_extraction(data_dir, workers=workers, progress=progress.step))


def _method_table(items, docs, specs, progress: _Progress, workers: int | None) -> list[dict]:
    """Every spec's scores on ``items``; a document of ``docs`` without an item is a cluster of its own."""
    from newsdedup.evaluation.methods import report_row, run_methods

    rows = []
    for run in run_methods(items, specs, workers=workers, progress=progress.step):
        for d in docs:
            run.predicted.setdefault(d["id"], f"alone:{d['id']}")
        rows.append(report_row(run, docs))
    return rows


def _with_default(rows: list[dict]) -> dict:
    from newsdedup.evaluation.methods import DEFAULT_METHOD

    default = next(row for row in rows if row["method"] == DEFAULT_METHOD)
    return {"default_method": DEFAULT_METHOD, "default": default, "methods": rows}


def _text_level(benchmark: Sequence[Mapping], progress: _Progress, workers: int | None) -> dict:
    from collections import Counter

    from newsdedup.evaluation.methods import method_specs

    specs = method_specs()
    progress.stage("text level", total=len(specs))
    items = [(d["id"], d["text"]) for d in benchmark]
    rows = _method_table(items, benchmark, specs, progress, workers)
    return {"docs": len(benchmark), "kinds": dict(Counter(d["kind"] for d in benchmark)), **_with_default(rows)}


def _page_level(data_dir: Path, out_dir: Path, docs: int, seed: int, progress: _Progress, workers: int | None) -> dict:
    from newsdedup.evaluation.methods import DEFAULT_METHOD, method_specs
    from newsdedup.evaluation.page_level import run_page_level

    specs = method_specs()
    progress.stage("page level", total=1 + len(specs))

    def rescore(benchmark: Sequence[Mapping], extracted: Mapping[str, str]) -> list[dict]:
        progress.step("crawl done")
        # Pages the crawl skipped (too short, JavaScript-only) have no text: each is a cluster of its own,
        # as in the crawl's own score.
        items = [(d["id"], extracted[d["id"]]) for d in benchmark if d["id"] in extracted]
        return _method_table(items, benchmark, specs, progress, workers)

    result = run_page_level(data_dir, docs=docs, method=DEFAULT_METHOD, seed=seed, workdir=out_dir / "page-level",
                            rescore=rescore, workers=workers)
    rows = result.pop("rescored")
    crawl_row = {
        "method": f"{DEFAULT_METHOD} (crawl)", "family": "product",
        "description": "the crawl itself: spider, extraction, exact and near-duplicate pipelines, SQLite",
        **{k: result[k] for k in ("precision", "recall", "f1", "pairs", "recall_by_kind", "recall_by_band",
                                 "negatives_fp", "fp_by_kind")},
        "negatives_fp_rate": result["negatives_fp"]["rate"],
    }
    leaks = result["related_leaks"]
    return {
        "docs": result["docs"],
        "default_method": DEFAULT_METHOD,
        "default": crawl_row,
        "methods": [crawl_row, *rows],
        "leaks": leaks["pages"],
        "leaks_detail": leaks,
        "crawl": result["crawl"],
        "shells": result["shells"],
        "extraction": result["extraction"],  # token F1 of the crawl's bodies per shell kind, hot-list leaks
        "timings": result["timings"],
        "command": result["command"],
    }


def run_evaluation(
    data_dir: Path,
    out_dir: Path,
    *,
    seed: int = 1,
    page_docs: int = DEFAULT_PAGE_DOCS,
    stages: Sequence[str] = STAGES,
    workers: int | None = None,
    progress: bool = True,
) -> dict:
    """Run the chosen ``stages`` on ``data_dir`` (the shared data folder); write results into ``out_dir``."""
    data_dir, out_dir = Path(data_dir), Path(out_dir)
    unknown = [s for s in stages if s not in STAGES]
    if unknown:
        raise ValueError(f"unknown stage(s) {', '.join(unknown)}: choose from {', '.join(STAGES)}")
    if not (data_dir / "sina-news-2018").is_dir():
        raise ValueError(
            f"{data_dir} does not hold the shared evaluation data (no sina-news-2018/ in it): "
            "pass --data pointing at the shared data folder"
        )
    out_dir.mkdir(parents=True, exist_ok=True)
    bar = _Progress(progress)
    started = time.perf_counter()
    timings: dict[str, float] = {}
    results: dict = {
        "meta": {
            "newsdedup": importlib.metadata.version("newsdedup"),
            "data": str(data_dir), "seed": seed, "stages": list(stages),
            "python": platform.python_version(), "cpus": os.cpu_count(),
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        },
    }
    benchmark = None
    try:
        if "extraction" in stages:
            mark = time.perf_counter()
            results["extraction"] = _extraction(data_dir, bar, workers)
            timings["extraction"] = time.perf_counter() - mark
        if "text" in stages or "experiments" in stages:
            from newsdedup.evaluation.reprints import build_text_benchmark

            mark = time.perf_counter()
            bar.stage("benchmark")
            benchmark = build_text_benchmark(data_dir, seed=seed)
            timings["benchmark"] = time.perf_counter() - mark
        if "text" in stages:
            mark = time.perf_counter()
            results["text_level"] = _text_level(benchmark, bar, workers)
            timings["text_level"] = time.perf_counter() - mark
        if "pages" in stages:
            mark = time.perf_counter()
            results["page_level"] = _page_level(data_dir, out_dir, page_docs, seed, bar, workers)
            timings["page_level"] = time.perf_counter() - mark
        if "experiments" in stages:
            from newsdedup.evaluation.experiments import run_paper_experiments

            mark = time.perf_counter()
            bar.stage("experiments")
            results["experiments"] = run_paper_experiments(
                data_dir, out_dir, benchmark_docs=benchmark, seed=seed, progress=lambda label, n: bar.step(label, n)
            )
            timings["experiments"] = time.perf_counter() - mark
    finally:
        bar.close()
    timings["total"] = time.perf_counter() - started
    results["meta"]["seconds"] = {k: round(v, 1) for k, v in timings.items()}
    (out_dir / "results.json").write_text(json.dumps(results, ensure_ascii=False, indent=1), encoding="utf-8")
    (out_dir / "report.md").write_text(format_markdown(results), encoding="utf-8")
    return results


# ----------------------------------------------------------------------------------------- output
def _f(value, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _method_rows_markdown(rows: Sequence[Mapping]) -> list[str]:
    lines = ["| method | kind | P | R | F1 | hard negatives merged | exact repeats caught | ms/doc (features + dedup) |",
             "|---|---|---|---|---|---|---|---|"]
    for row in rows:
        cost = row.get("ms_per_doc")
        cost_text = "-" if not cost else (
            f"{cost['total']:.2f}" if cost["features"] is None else f"{cost['total']:.2f} ({cost['features']:.2f} + {cost['dedup']:.2f})")
        negatives = row["negatives_fp"]
        lines.append(
            f"| {row['method']} | {row['family']} | {_f(row['precision'])} | {_f(row['recall'])} | **{_f(row['f1'])}** | "
            f"{negatives['hits']}/{negatives['total']} | {_f(row.get('exact_detection'), 2)} | {cost_text} |"
        )
    return lines


def _recall_markdown(rows: Sequence[Mapping], key: str) -> list[str]:
    from newsdedup.evaluation.scoring import EDIT_BANDS

    present = {k for row in rows for k in row[key]}
    band_order = [name for name, _ in EDIT_BANDS]
    columns = [b for b in band_order if b in present] + sorted(present - set(band_order))
    lines = ["| method | " + " | ".join(columns) + " |", "|---|" + "---|" * len(columns)]
    for row in rows:
        cells = [_f(row[key][c]["rate"], 2) if c in row[key] else "-" for c in columns]
        lines.append(f"| {row['method']} | " + " | ".join(cells) + " |")
    return lines


def format_markdown(results: Mapping) -> str:
    """The Markdown report: every table, the plots, and how each figure was produced."""
    meta = results["meta"]
    lines = [
        "# newsdedup evaluation report", "",
        f"Data `{meta['data']}`, seed {meta['seed']}, Python {meta['python']} on {meta['cpus']} cores, "
        f"started {meta['started']}; seconds per stage: {meta.get('seconds')}.", "",
        "Reproduce: `newsdedup eval --data ../shared/data --out DIR`. Pairwise precision / recall / F1 over all pairs",
        "of documents that share a true story (the papers' measure).", "",
    ]
    if (ex := results.get("extraction")):
        from newsdedup.evaluation.extraction import format_markdown as extraction_markdown

        lines += extraction_markdown(ex)
    for key, title, intro in (
        ("text_level", "Text level",
         "The seeded reprint benchmark from `sina-news-2018`, through `newsdedup dedup`'s code (exact stage, then "
         "Single-Pass) for the product's methods, and through the baselines."),
        ("page_level", "Page level",
         "The same kind of benchmark embedded in real page shells, served on 127.0.0.1 and crawled by the spider "
         "(first row: the crawl itself, default method); the other rows dedup the texts that crawl extracted."),
    ):
        if not (level := results.get(key)):
            continue
        lines += [f"## {title}", "", intro, "", f"{level['docs']} documents; default method "
                  f"**{level['default_method']}**.", ""]
        if key == "text_level":
            lines += ["Kinds: " + ", ".join(f"{k} {v}" for k, v in sorted(level["kinds"].items())), ""]
        lines += _method_rows_markdown(level["methods"]) + [""]
        lines += ["Recall by reprint kind:", ""] + _recall_markdown(level["methods"], "recall_by_kind") + [""]
        lines += ["Recall by edit ratio:", ""] + _recall_markdown(level["methods"], "recall_by_band") + [""]
        if key == "page_level":
            crawl = level["crawl"]
            lines += [
                f"Crawl: {crawl['article_requests']} article pages in {crawl['crawl_seconds']} s, "
                f"{crawl['exported']} exported {crawl['statuses']}, {crawl['skipped']} skipped "
                f"{crawl['skipped_by_reason']}. Related-reading leaks: **{level['leaks']}** of "
                f"{level['leaks_detail']['checked']} bodies. Shells: {level['shells']['real']} real (every one the data "
                f"gives) and hard variants {level['shells']['hard']}; extraction token F1 of the crawl's bodies by shell: "
                + ", ".join(f"{k} {v['f1']} ({v['under_0.9']} of {v['pages']} under 0.9)"
                            for k, v in level["extraction"]["f1_by_shell"].items())
                + f"; bodies holding hot-list text: {level['extraction']['hot_list_leaks']['pages']}.", "",
            ]
    if (experiments := results.get("experiments")):
        from newsdedup.evaluation.experiments import format_markdown as experiments_markdown

        lines += ["## The papers' experiments", "", experiments_markdown(experiments), ""]
    return "\n".join(lines)


def format_summary(results: Mapping) -> str:
    """The short table ``newsdedup eval`` prints."""
    lines = []
    if (ex := results.get("extraction")):
        held = ex["held_out"]
        lines.append(
            f"extraction: cwced F1 {_f(ex['cwced'].get('f1'))}; held out: {held.get('meeting_target')}/"
            f"{len(held.get('units', []))} meet the target, lowest F1 {_f(held.get('min_f1'))}, {held.get('empty')} empty; "
            f"leaks {ex['leaks']['leaking']}/{ex['leaks']['pages']}, snippets {ex['snippets']['passed']}/{ex['snippets']['total']}"
        )
    text, pages = results.get("text_level"), results.get("page_level")
    if text or pages:
        page_rows = {row["method"]: row for row in (pages or {}).get("methods", [])}
        lines.append(f"{'method':<22}{'text P':>8}{'R':>7}{'F1':>7}{'page P':>9}{'R':>7}{'F1':>7}{'ms/doc':>8}")
        names = [row["method"] for row in (text or pages)["methods"]]
        if pages and text:
            names = [pages["methods"][0]["method"], *names]
        text_rows = {row["method"]: row for row in (text or {}).get("methods", [])}
        for name in names:
            t, p = text_rows.get(name), page_rows.get(name)
            cost = (t or p or {}).get("ms_per_doc")
            lines.append(
                f"{name:<22}{_f(t and t['precision']):>8}{_f(t and t['recall']):>7}{_f(t and t['f1']):>7}"
                f"{_f(p and p['precision']):>9}{_f(p and p['recall']):>7}{_f(p and p['f1']):>7}"
                f"{(_f(cost['total'], 2) if cost else '-'):>8}"
            )
    if pages:
        lines.append(f"page level: {pages['docs']} pages, related-reading leaks {pages['leaks']}")
    if (experiments := results.get("experiments")):
        lines.append("papers' experiments: " + ", ".join(str(p) for p in experiments.get("plots", [])))
    lines.append(f"seconds: {results['meta'].get('seconds')}")
    return "\n".join(lines)


def data_dir_default() -> Path:
    """``$NEWSDEDUP_EVAL_DATA``, else ``../shared/data`` (where CI keeps it beside the checkout)."""
    return Path(os.environ.get("NEWSDEDUP_EVAL_DATA", "../shared/data"))


def parse_stages(text: str) -> list[str]:
    stages = [s.strip() for s in text.split(",") if s.strip()]
    unknown = [s for s in stages if s not in STAGES]
    if unknown:
        raise ValueError(f"unknown stage(s) {', '.join(unknown)}: choose from {', '.join(STAGES)}")
    return stages
