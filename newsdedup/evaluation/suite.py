"""``newsdedup eval``: every quality measure of the project in one reproducible, seeded run.

1. **Extraction** (:mod:`newsdedup.evaluation.extraction`) against gold text, snippets and leak checks.
2. **Text level**: the reprint benchmark (:mod:`newsdedup.evaluation.reprints`) in two disjoint halves; each
   product method's parameters are tuned on one (:func:`newsdedup.evaluation.methods.tune`), every row is scored
   on the other, held out, with the tune-half F1 beside it.
3. **Page level** (:mod:`newsdedup.evaluation.page_level`): held-out texts in real page shells crawled by the
   spider with the default method; the other rows dedup the texts that crawl extracted. Optionally the same
   pages crawled again by several processes sharing Redis and PostgreSQL (``page_level_distributed``).
4. **The papers' experiments** (:mod:`newsdedup.evaluation.experiments`), each a table and a PNG.

Writes ``results.json``, ``report.md`` and the plots into ``--out``.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import platform
import time
from newsdedup.evaluation.markdown import cell, table
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

STAGES = ("extraction", "text", "pages", "experiments", "pairs")
DEFAULT_PAGE_DOCS = 1500


class _Progress:
    """A tqdm bar per stage (tqdm is an evaluation dependency), or nothing."""

    def __init__(self, enabled: bool) -> None:
        self.enabled, self._bar = enabled, None

    def stage(self, name: str) -> None:
        from tqdm import tqdm

        self.close()
        self._bar = tqdm(desc=f"{name:<12}", unit="step", dynamic_ncols=True, disable=not self.enabled)

    def step(self, label: str = "") -> None:
        self._bar.set_postfix_str(label[-40:], refresh=False)
        self._bar.update()

    def close(self) -> None:
        self._bar = self._bar.close() if self._bar is not None else None


def _extraction(data_dir: Path, progress: _Progress, workers: int | None) -> dict:
    from newsdedup.evaluation.extraction import evaluate_extraction, summarise

    return summarise(evaluate_extraction(data_dir, workers=workers, progress=progress.step))


def _with_default(rows: list[dict]) -> dict:
    from newsdedup.evaluation.methods import DEFAULT_METHOD

    return {"default_method": DEFAULT_METHOD, "default": next(r for r in rows if r["method"] == DEFAULT_METHOD),
            "methods": rows}


def _text_level(data_dir: Path, docs: Sequence[Mapping], seed: int, progress: _Progress, workers: int | None
                ) -> tuple[dict, list]:
    """The method table on the test half with each product row's tune-half figures, and the rows' specs."""
    from newsdedup.evaluation import methods
    from newsdedup.evaluation.reprints import build_text_benchmark

    tune_docs = build_text_benchmark(data_dir, seed=seed, split="tune")
    streams = [[(d["id"], d["text"]) for d in tune_docs], [(d["id"], d["text"]) for d in docs]]
    rows, specs, tuning = [], [], {}
    with methods.Runner(workers, progress.step) as runner:
        for method in methods.METHODS:
            tuned = None
            if method in methods.TUNING_GRID:
                tuned, tried = methods.tune(runner, tune_docs, method)
                tuning[method] = {"chosen": methods.describe(tuned),
                                  "default": methods.describe(methods.NearSettings(method=method)), "tried": tried}
            method_specs = methods.product_specs(method, tuned)
            for tune_run, test_run in zip(*runner.run(streams, method_specs)):
                tune_row = methods.report_row(tune_run, tune_docs)
                rows.append({**methods.report_row(test_run, docs),
                             "tune": {k: tune_row[k] for k in ("precision", "recall", "f1", "negatives_fp_rate")}})
            specs += method_specs
        specs += methods.baseline_specs()
        rows += [methods.report_row(run, docs) for run in runner.run(streams[1:], specs[-3:])[0]]
    return {"docs": len(docs), "tune_docs": len(tune_docs), "kinds": dict(Counter(d["kind"] for d in docs)),
            "tuning": tuning, **_with_default(rows)}, specs


def page_level_summary(result: Mapping, description: str, other_rows: Sequence[Mapping] = ()) -> dict:
    """What results.json keeps of a page-level crawl (:func:`~newsdedup.evaluation.page_level.crawl_page_benchmark`):
    the crawl as the first row of its method table (``description`` says which crawl), then ``other_rows``."""
    crawl_row = {"method": f"{result['method']} (crawl)", "family": "product", "description": description,
                 **{k: result[k] for k in ("precision", "recall", "f1", "pairs", "recall_by_kind", "recall_by_band",
                                          "negatives_fp", "fp_by_kind")},
                 "negatives_fp_rate": result["negatives_fp"]["rate"]}
    return {"docs": result["docs"], "default_method": result["method"], "default": crawl_row,
            "methods": [crawl_row, *other_rows], "leaks": result["related_leaks"]["pages"],
            "leaks_detail": result["related_leaks"], "crawl": result["crawl"], "shells": result["shells"],
            "extraction": result["extraction"],  # token F1 per shell kind, hot-list leaks
            "timings": result["timings"], "command": result["command"]}


def _page_level(data_dir: Path, out_dir: Path, docs: int, seed: int, specs: Sequence, progress: _Progress,
                workers: int | None, distributed: Mapping | None = None) -> tuple[dict, dict | None]:
    """The page level crawled by one process (and the other methods rescored on its texts); with ``distributed``
    (``processes``, ``redis_url``, ``storage_uri``) the same pages crawled again by that many processes."""
    from newsdedup.evaluation.methods import DEFAULT_METHOD, Runner, report_row
    from newsdedup.evaluation.page_level import build_page_benchmark, crawl_page_benchmark

    def rescore(benchmark: Sequence[Mapping], extracted: Mapping[str, str]) -> list[dict]:
        progress.step("crawl done")
        with Runner(workers, progress.step) as runner:
            runs = runner.run([[(d["id"], extracted[d["id"]]) for d in benchmark if d["id"] in extracted]], specs)[0]
        for run in runs:  # pages the crawl skipped (too short, script only) are clusters of their own
            for d in benchmark:
                run.predicted.setdefault(d["id"], f"alone:{d['id']}")
        return [report_row(run, benchmark) for run in runs]

    bench = build_page_benchmark(data_dir, docs=docs, seed=seed, workers=workers)
    result = crawl_page_benchmark(bench, workdir=out_dir / "page-level", method=DEFAULT_METHOD, rescore=rescore)
    result["timings"] = {**{k: round(v, 2) for k, v in bench.timings.items()}, **result["timings"]}
    one = page_level_summary(result, "the crawl itself: spider, extraction, exact and near-duplicate pipelines, "
                                     "SQLite", result["rescored"])
    if not distributed:
        return one, None
    progress.step(f"{distributed['processes']} processes")
    result = crawl_page_benchmark(bench, workdir=out_dir / "page-level-distributed", method=DEFAULT_METHOD,
                                  **distributed)
    return one, page_level_summary(result, f"the same pages crawled by {distributed['processes']} processes sharing "
                                           "Redis and PostgreSQL")


def run_evaluation(data_dir: Path, out_dir: Path, *, seed: int = 1, page_docs: int = DEFAULT_PAGE_DOCS,
                   stages: Sequence[str] = STAGES, workers: int | None = None, progress: bool = True,
                   distributed: int = 0, redis_url: str | None = None, storage_uri: str | None = None) -> dict:
    """Run the chosen ``stages`` on ``data_dir`` (the shared data folder); write the results into ``out_dir``.

    ``distributed`` >= 2: the ``pages`` stage also crawls its pages with that many processes against ``redis_url``
    and the empty PostgreSQL database ``storage_uri`` (results under ``page_level_distributed``).
    """
    from newsdedup.evaluation.page_level import check_distributed, preflight_distributed
    from newsdedup.evaluation.reprints import build_text_benchmark

    data_dir, out_dir = Path(data_dir), Path(out_dir)
    stages = parse_stages(",".join(stages))
    spread = None
    if distributed or redis_url or storage_uri:
        if distributed < 2:
            raise ValueError(f"--distributed takes the number of crawl processes, 2 or more (got {distributed}); "
                             "--redis-url and --storage-uri go with it")
        check_distributed(distributed, redis_url, storage_uri)
        if "pages" not in stages:
            raise ValueError("--distributed crawls the page level again: add pages to --stages")
        preflight_distributed(redis_url, storage_uri)  # now, not after the stages before it
        spread = {"processes": distributed, "redis_url": redis_url, "storage_uri": storage_uri}
    if not (data_dir / "sina-news-2018").is_dir():
        raise ValueError(f"{data_dir} does not hold the shared evaluation data (no sina-news-2018/ in it): "
                         "pass --data pointing at the shared data folder")
    out_dir.mkdir(parents=True, exist_ok=True)
    bar, seconds, started = _Progress(progress), {}, time.perf_counter()
    results: dict = {"meta": {"newsdedup": importlib.metadata.version("newsdedup"), "data": str(data_dir), "seed": seed,
                              "stages": list(stages), "python": platform.python_version(), "cpus": os.cpu_count(),
                              "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}}
    specs: list = []
    benchmark: list[dict] = []  # the test half, built once for the text level and the experiments
    try:
        for stage in stages:
            if stage in ("text", "experiments") and not benchmark:
                mark = time.perf_counter()
                benchmark = build_text_benchmark(data_dir, seed=seed)
                seconds["benchmark"] = time.perf_counter() - mark
            mark = time.perf_counter()
            bar.stage(stage)
            if stage == "extraction":
                results["extraction"] = _extraction(data_dir, bar, workers)
            elif stage == "text":
                results["text_level"], specs = _text_level(data_dir, benchmark, seed, bar, workers)
            elif stage == "pages":
                if not specs:
                    from newsdedup.evaluation.methods import METHODS, baseline_specs, product_specs

                    specs = [s for m in METHODS for s in product_specs(m)] + baseline_specs()
                results["page_level"], distributed_pages = _page_level(data_dir, out_dir, page_docs, seed, specs, bar,
                                                                       workers, spread)
                if distributed_pages is not None:
                    results["page_level_distributed"] = distributed_pages
            elif stage == "pairs":
                from newsdedup.evaluation.real_pair_scores import stage_results

                from newsdedup.evaluation.reuse_scores import held_out

                from newsdedup.evaluation import relations

                results["real_pairs"] = stage_results(data_dir)
                results["reuse"] = held_out(data_dir)
                results["relations"] = relations.stage_results(data_dir)
            else:
                from newsdedup.evaluation.experiments import run_paper_experiments

                results["experiments"] = run_paper_experiments(
                    data_dir, out_dir, benchmark_docs=benchmark, seed=seed,
                    workers=workers, progress=bar.step)
            seconds[{"text": "text_level", "pages": "page_level"}.get(stage, stage)] = time.perf_counter() - mark
    finally:
        bar.close()
    seconds["total"] = time.perf_counter() - started
    results["meta"]["seconds"] = {k: round(v, 1) for k, v in seconds.items()}
    (out_dir / "results.json").write_text(json.dumps(results, ensure_ascii=False, indent=1), encoding="utf-8")
    (out_dir / "report.md").write_text(format_markdown(results), encoding="utf-8")
    return results


# --------------------------------------------------------------------------------------------- output
def _method_table(rows: Sequence[Mapping]) -> list[str]:
    def cost(c: Mapping | None) -> str:
        return "-" if not c else f"{c['total']:.2f}" + (f" ({c['features']:.2f} + {c['dedup']:.2f})" if c["features"] else "")

    return table(["method", "kind", "parameters", "tune F1", "P", "R", "F1", "hard negatives merged",
                  "exact repeats caught", "ms/doc (features + dedup)"],
                 [[r["method"], r["family"], r["description"], cell(r.get("tune", {}).get("f1")), cell(r["precision"]),
                   cell(r["recall"]), f"**{cell(r['f1'])}**", f"{r['negatives_fp']['hits']}/{r['negatives_fp']['total']}",
                   cell(r.get("exact_detection"), 2), cost(r.get("ms_per_doc"))] for r in rows])


def _recall_table(rows: Sequence[Mapping], key: str) -> list[str]:
    columns = list(dict.fromkeys(k for row in rows for k in row[key]))
    return table(["method", *columns], [[r["method"], *(cell(r[key][c]["rate"], 2) if c in r[key] else "-"
                                                          for c in columns)] for r in rows])


def _page_figures(pages: Mapping) -> dict[str, str]:
    """The figures the 1- and N-process page-level crawls are compared by."""
    crawl, row = pages["crawl"], pages["default"]
    return {"P": cell(row["precision"]), "R": cell(row["recall"]), "F1": cell(row["f1"]),
            "hard negatives merged": f"{row['negatives_fp']['hits']}/{row['negatives_fp']['total']}",
            "related leaks": str(pages["leaks"]), "hot-list leaks": str(pages["extraction"]["hot_list_leaks"]["pages"]),
            "exported": str(crawl["exported"]), "skipped": str(crawl["skipped"]),
            "stored twice": str(crawl.get("stored_twice", "-")),
            "statuses": " ".join(f"{k} {v}" for k, v in sorted(crawl["statuses"].items())),
            "crawl s": str(crawl["crawl_seconds"])}


def _distributed_markdown(one: Mapping | None, spread: Mapping) -> list[str]:
    crawl = spread["crawl"]
    runs = [("1 process", one)] if one else []
    runs.append((f"{crawl['processes']} processes", spread))
    columns = list(_page_figures(spread))
    return ["### Page level, distributed", "",
            f"The same pages crawled by {crawl['processes']} processes at once, sharing one Redis and one PostgreSQL "
            "database as distributed crawls do (docs/distributed.md), exported from that database and scored as the "
            "single process's crawl. Article pages fetched by each process: "
            f"{', '.join(map(str, crawl['article_pages_by_process']))}.", "",
            *table(["crawl", *columns], [[name, *(_page_figures(r)[c] for c in columns)] for name, r in runs]),
            "", "Token F1 of the bodies by shell: " + "; ".join(
                f"{name}: " + ", ".join(f"{k} {v['f1']} ({v['under_0.9']} under 0.9)"
                                        for k, v in r["extraction"]["f1_by_shell"].items()) for name, r in runs), ""]


def format_markdown(results: Mapping) -> str:
    """The Markdown report: every table, the plots, and how each figure was produced."""
    meta = results["meta"]
    lines = ["# newsdedup evaluation report", "",
             f"Data `{meta['data']}`, seed {meta['seed']}, Python {meta['python']} on {meta['cpus']} cores, started "
             f"{meta['started']}; seconds per stage: {meta.get('seconds')}.", "",
             "Reproduce: `newsdedup eval --data ../shared/data --out DIR`. Pairwise precision / recall / F1 over all "
             "pairs of documents that share a true story (the papers' measure).", ""]
    if ex := results.get("extraction"):
        from newsdedup.evaluation.extraction import format_markdown as extraction_markdown

        lines += extraction_markdown(ex)
    if text := results.get("text_level"):
        lines += ["## Text level", "",
                  "The seeded reprint benchmark from `sina-news-2018` in two disjoint halves, through `newsdedup dedup`'s "
                  "code (exact stage, then Single-Pass) and the baselines. Parameters are tuned on the tune half "
                  f"({text['tune_docs']} documents: the highest F1 at precision >= 0.99 with at most 1% of the hard "
                  "negatives merged, by coordinate ascent from the shipped defaults); the figures are those of the "
                  f"held-out test half ({text['docs']} documents, which alone also holds Sogou texts as hard "
                  "negatives). `tune F1` is the same row on the tune half.", "",
                  "Kinds: " + ", ".join(f"{k} {v}" for k, v in sorted(text["kinds"].items())), "",
                  *_method_table(text["methods"]), "",
                  *(f"- {method}: tuning chose {t['chosen']} (shipped default: {t['default']}; {len(t['tried'])} "
                    "settings tried)" for method, t in text["tuning"].items()), "",
                  "Recall by reprint kind:", "", *_recall_table(text["methods"], "recall_by_kind"), "",
                  "Recall by edit ratio:", "", *_recall_table(text["methods"], "recall_by_band"), ""]
    if pages := results.get("page_level"):
        crawl = pages["crawl"]
        lines += ["## Page level", "", "Test-half texts embedded in real page shells, served on 127.0.0.1 and crawled by "
                  "the spider (first row: the crawl itself, default method); the other rows dedup the texts that crawl "
                  f"extracted. {pages['docs']} documents.", "", *_method_table(pages["methods"]), "",
                  "Recall by reprint kind:", "", *_recall_table(pages["methods"], "recall_by_kind"), "",
                  f"Crawl: {crawl['article_requests']} article pages in {crawl['crawl_seconds']} s, {crawl['exported']} "
                  f"exported {crawl['statuses']}, {crawl['skipped']} skipped {crawl['skipped_by_reason']}. "
                  f"Related-reading leaks: **{pages['leaks']}** of {pages['leaks_detail']['checked']} bodies. Shells: "
                  f"{pages['shells']['real']} real (every one the data gives) and hard variants {pages['shells']['hard']}; "
                  "token F1 of the crawl's bodies by shell: " + ", ".join(
                      f"{k} {v['f1']} ({v['under_0.9']} of {v['pages']} under 0.9)"
                      for k, v in pages["extraction"]["f1_by_shell"].items())
                  + f"; bodies holding hot-list text: {pages['extraction']['hot_list_leaks']['pages']}.", ""]
    if spread := results.get("page_level_distributed"):
        lines += _distributed_markdown(results.get("page_level"), spread)
    if pairs := results.get("real_pairs"):
        from newsdedup.evaluation.real_pair_scores import markdown as pairs_markdown

        lines += pairs_markdown(pairs)
    if reuse := results.get("reuse"):
        from newsdedup.evaluation.reuse_scores import summary_lines as reuse_lines

        lines += ["### Passage reuse on the real labelled pairs", "", *reuse_lines(reuse), ""]
    if relations := results.get("relations"):
        from newsdedup.evaluation.relations import markdown as relations_markdown

        lines += relations_markdown(relations)
    if experiments := results.get("experiments"):
        from newsdedup.evaluation.experiments import format_markdown as experiments_markdown

        lines += ["## The papers' experiments", "", experiments_markdown(experiments), ""]
    return "\n".join(lines)


def format_summary(results: Mapping) -> str:
    """The short table ``newsdedup eval`` prints."""
    lines = []
    if ex := results.get("extraction"):
        held = ex["held_out"]
        lines.append(f"extraction: cwced F1 {cell(ex['cwced'].get('f1'))}; held out: {held.get('meeting_target')}/"
                     f"{len(held.get('units', []))} meet the target, lowest F1 {cell(held.get('min_f1'))}, "
                     f"{held.get('empty')} empty; leaks {ex['leaks']['leaking']}/{ex['leaks']['pages']}, snippets "
                     f"{ex['snippets']['passed']}/{ex['snippets']['total']}")
    text, pages = results.get("text_level") or {}, results.get("page_level") or {}
    if text or pages:
        by_name = [{r["method"]: r for r in level.get("methods", [])} for level in (text, pages)]
        lines.append(f"{'method':<22}{'tune F1':>8}{'text P':>8}{'R':>7}{'F1':>7}{'page P':>9}{'R':>7}{'F1':>7}{'ms/doc':>8}")
        for name in dict.fromkeys([*by_name[1], *by_name[0]]):
            t, p = by_name[0].get(name), by_name[1].get(name)
            cost = (t or p).get("ms_per_doc")
            lines.append(f"{name:<22}{cell(t and t.get('tune', {}).get('f1')):>8}{cell(t and t['precision']):>8}"
                         f"{cell(t and t['recall']):>7}{cell(t and t['f1']):>7}{cell(p and p['precision']):>9}"
                         f"{cell(p and p['recall']):>7}{cell(p and p['f1']):>7}{(cell(cost['total'], 2) if cost else '-'):>8}")
    if pages:
        lines.append(f"page level: {pages['docs']} pages, related-reading leaks {pages['leaks']}")
    if spread := results.get("page_level_distributed"):
        row, crawl = spread["default"], spread["crawl"]
        lines.append(f"page level, {crawl['processes']} processes: P {cell(row['precision'])} R {cell(row['recall'])} "
                     f"F1 {cell(row['f1'])}, related-reading leaks {spread['leaks']}, hot-list leaks "
                     f"{spread['extraction']['hot_list_leaks']['pages']}, {crawl['stored_twice']} pages stored twice")
    if pairs := results.get("real_pairs"):
        from newsdedup.evaluation.real_pair_scores import summary_lines

        lines += ["real labelled pairs:", *summary_lines(pairs)]
    if reuse := results.get("reuse"):
        from newsdedup.evaluation.reuse_scores import summary_lines as reuse_lines

        lines += reuse_lines(reuse)
    if relations := results.get("relations"):
        from newsdedup.evaluation.relations import lines as relations_lines

        lines += relations_lines(relations)
    if experiments := results.get("experiments"):
        lines.append("papers' experiments: " + ", ".join(experiments["plots"]))
    return "\n".join([*lines, f"seconds: {results['meta'].get('seconds')}"])


def data_dir_default() -> Path:
    """``$NEWSDEDUP_EVAL_DATA``, else ``../shared/data`` (where CI keeps it beside the checkout)."""
    return Path(os.environ.get("NEWSDEDUP_EVAL_DATA", "../shared/data"))


def parse_stages(text: str) -> list[str]:
    stages = [s.strip() for s in text.split(",") if s.strip()]
    if unknown := [s for s in stages if s not in STAGES]:
        raise ValueError(f"unknown stage(s) {', '.join(unknown)}: choose from {', '.join(STAGES)}")
    return stages
