"""The ``newsdedup`` command line: demo, export, extract, dedup, antecedents, eval.

Crawling itself is ``scrapy crawl portal`` from the project root (see README.md).
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TextIO

EXPORT_FIELDS = (
    "url", "site", "title", "text", "published_at", "author", "source",
    "status", "duplicate_of", "cluster_id", "similarity", "method",
)


def _open_output(path: str) -> TextIO:
    if path == "-":
        return sys.stdout
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    return open(path, "w", encoding="utf-8")


def _dump(obj: dict, out: TextIO) -> None:
    out.write(json.dumps(obj, ensure_ascii=False) + "\n")


# -- demo ----------------------------------------------------------------------------------
def cmd_demo(args: argparse.Namespace) -> int:
    from newsdedup.demo.run import run_demo

    return run_demo(storage=args.storage, workers=args.workers, verbose=args.verbose)


# -- export --------------------------------------------------------------------------------
def cmd_export(args: argparse.Namespace) -> int:
    from newsdedup.storage import open_store

    store = open_store(args.storage)
    if args.storage.startswith("sqlite:///") and not Path(args.storage[len("sqlite:///"):]).exists():
        print(f"newsdedup export: no database at {args.storage}", file=sys.stderr)
        return 2
    store.open()
    out = _open_output(args.output)
    try:
        count = 0
        for row in store.iter_export():
            _dump({field: row[field] for field in EXPORT_FIELDS}, out)
            count += 1
    finally:
        store.close()
        if out is not sys.stdout:
            out.close()
    print(f"exported {count} article pages", file=sys.stderr)
    return 0


# -- extract -------------------------------------------------------------------------------
def cmd_extract(args: argparse.Namespace) -> int:
    from newsdedup.extract.extractor import SkipPage, extract_article

    if args.url and len(args.paths) > 1:
        print("newsdedup extract: --url names the URL of one page; give one PATH with it", file=sys.stderr)
        return 2
    skipped = 0
    for path in args.paths:
        try:
            body = Path(path).read_bytes()
        except OSError as exc:
            print(f"{path}: cannot read ({exc.strerror})", file=sys.stderr)
            skipped += 1
            continue
        try:
            article = extract_article(body, args.url, min_chars=args.min_chars)
        except SkipPage as skip:
            print(f"{path}: skipped ({skip.reason}): {skip}", file=sys.stderr)
            skipped += 1
            continue
        _dump(
            {
                "path": path, "url": args.url or article.canonical_url, "title": article.title,
                "text": article.text, "published_at": article.published_at, "author": article.author,
                "source": article.source,
            },
            sys.stdout,
        )
    if skipped:
        print(f"{skipped} of {len(args.paths)} pages skipped", file=sys.stderr)
    return 0


# -- dedup ---------------------------------------------------------------------------------
def _read_docs(stream: TextIO, bad: list[str]) -> Iterator[tuple[str, str]]:
    for number, line in enumerate(stream, 1):
        if not line.strip():
            continue
        try:
            doc = json.loads(line)
            doc_id, text = doc["id"], doc["text"]
            if not isinstance(text, str):
                raise TypeError("text is not a string")
        except (ValueError, KeyError, TypeError) as exc:
            bad.append(f"line {number}: {type(exc).__name__}: {exc}")
            continue
        # The title is not part of the fingerprint: reprints rewrite headlines far more than bodies.
        yield str(doc_id), text


def cmd_dedup(args: argparse.Namespace) -> int:
    from newsdedup.analysis import AnalysisPool, analyse_text
    from newsdedup.dedup.engine import Deduplicator
    from newsdedup.dedup.features import FeatureConfig
    from newsdedup.dedup.single_pass import NearSettings, SinglePassClusterer, make_detector

    try:
        features = FeatureConfig(
            method=args.method, segmenter=args.segmenter, simhash_bits=args.simhash_bits,
            simhash_features=args.simhash_features, antecedents=args.antecedents,
            spot_chain=args.spot_chain, spot_distance=args.spot_distance,
            dwdcs_key_concepts=args.key_concepts, dwdcs_hub_candidates=args.hub_candidates,
            dwdcs_min_frequency=args.min_concept_frequency, dwdcs_merge_threshold=args.concept_merge,
            dwdcs_max_nodes=args.max_concept_nodes, dwdcs_synonyms=args.synonyms,
        )
        near = NearSettings(
            method=args.method, simhash_bits=args.simhash_bits, simhash_max_distance=args.max_distance,
            spotsigs_tau=args.tau, spotsigs_min_signatures=args.min_signatures,
            spotsigs_min_containment=args.min_containment or None,
            spotsigs_containment_min_spots=args.containment_min_spots,
            esimhash_max_distance=args.esimhash_max_distance, esimhash_weight_cap=args.weight_cap,
            dwdcs_cosine=args.dwdcs_cosine, dwdcs_max_variance=args.dwdcs_max_variance,
            dwdcs_min_key_concepts=args.min_key_concepts,
        )
        dedup = Deduplicator(SinglePassClusterer(make_detector(near)))
    except ValueError as exc:
        print(f"newsdedup dedup: {exc}", file=sys.stderr)
        return 2
    source = sys.stdin if args.input == "-" else open(args.input, encoding="utf-8")
    out = _open_output(args.output)
    bad: list[str] = []
    pool = AnalysisPool(features, workers=args.workers)
    pool.start()
    counts = {"unique": 0, "near_duplicate": 0, "exact_duplicate": 0}
    try:
        docs = _read_docs(source, bad)
        ids: collections.deque[str] = collections.deque()

        def texts() -> Iterator[str]:
            for doc_id, text in docs:
                ids.append(doc_id)
                yield text

        for doc_features in pool.map(analyse_text, texts()):
            doc_id = ids.popleft()  # results come back in input order
            verdict = dedup.process(doc_id, doc_features)
            counts[verdict.status] += 1
            similarity = None if verdict.similarity is None else round(verdict.similarity, 4)
            _dump(
                {"id": doc_id, "status": verdict.status, "duplicate_of": verdict.duplicate_of,
                 "cluster_id": verdict.cluster_id, "similarity": similarity, "method": verdict.method},
                out,
            )
    finally:
        pool.shutdown()
        if source is not sys.stdin:
            source.close()
        if out is not sys.stdout:
            out.close()
    for message in bad[:20]:
        print(f"skipped input {message}", file=sys.stderr)
    print(
        f"{sum(counts.values())} documents: {counts['unique']} unique, {counts['near_duplicate']} near duplicates, "
        f"{counts['exact_duplicate']} exact duplicates; {len(bad)} bad input lines skipped",
        file=sys.stderr,
    )
    return 0


# -- antecedents ---------------------------------------------------------------------------
def cmd_antecedents(args: argparse.Namespace, rest: Sequence[str]) -> int:
    from newsdedup.dedup.antecedents import main as antecedents_main

    return antecedents_main(list(rest))


# -- eval ----------------------------------------------------------------------------------
def cmd_eval(args: argparse.Namespace) -> int:
    try:
        # The evaluation's own libraries, checked before a run of several minutes rather than in its middle.
        import datasketch  # noqa: F401
        import matplotlib  # noqa: F401
        import tqdm  # noqa: F401

        from newsdedup.evaluation import floors as quality_floors
        from newsdedup.evaluation.suite import format_summary, parse_stages, run_evaluation
    except ImportError as exc:
        print(f"newsdedup eval: {exc}; install the evaluation extra: pip install -e '.[eval]'", file=sys.stderr)
        return 2
    floors_file = args.floors or quality_floors.default_floors_path()
    if args.lower_floor:
        metric, sep, value = args.lower_floor.partition("=")
        try:
            if not sep:
                raise ValueError(f"--lower-floor takes METRIC=VALUE, got {args.lower_floor!r}")
            quality_floors.lower_floor(floors_file, metric.strip(), float(value), reason=args.reason or "")
        except ValueError as exc:
            print(f"newsdedup eval: {exc}", file=sys.stderr)
            return 2
        return 0
    try:
        floors = quality_floors.load_floors(args.floors) if (args.check_floors or args.raise_floors) else None
        results = run_evaluation(args.data, args.out, seed=args.seed, page_docs=args.page_docs,
                                 stages=parse_stages(args.stages), workers=args.workers, progress=not args.no_progress)
    except ValueError as exc:
        print(f"newsdedup eval: {exc}", file=sys.stderr)
        return 2
    print(format_summary(results))
    print(f"wrote {args.out / 'results.json'} and {args.out / 'report.md'}")
    status = 0
    if floors is not None:
        checks = quality_floors.check_floors(results, floors)
        report = quality_floors.format_check(checks)
        print(report)
        with open(args.out / "report.md", "a", encoding="utf-8") as markdown:
            markdown.write(f"\n## Quality floors\n\nFrom `{floors.source}`:\n\n```\n{report}\n```\n")
        if args.raise_floors:
            for change in quality_floors.raise_floors(results, floors_file, headroom=args.headroom):
                print(f"raised floor: {change}")
        if args.check_floors and not all(check.passed for check in checks):
            print("newsdedup eval: quality is below a floor (see above)", file=sys.stderr)
            status = 1
    return status


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="newsdedup",
        description="Crawl Chinese news portals and deduplicate articles inline. "
        "Crawl with `scrapy crawl portal -a sites=config/sites.toml` from the project root.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", help="crawl the bundled offline mini-portal on 127.0.0.1 and print a summary")
    demo.add_argument("--storage", default=None,
                      help="storage URI for the demo database (default: a new temporary SQLite file)")
    demo.add_argument("--workers", type=int, default=None, help="worker processes (default: one per core)")
    demo.add_argument("--verbose", action="store_true", help="show Scrapy's log")
    demo.set_defaults(func=cmd_demo)

    export = sub.add_parser("export", help="JSON lines, one per article page fetched (articles and exact repeats)")
    export.add_argument("--storage", required=True, help="storage URI, e.g. sqlite:///news.sqlite")
    export.add_argument("--output", "-o", default="-", help="output file (default: standard output)")
    export.set_defaults(func=cmd_export)

    extract = sub.add_parser("extract", help="extract the article of saved HTML pages as JSON lines")
    extract.add_argument("paths", nargs="+", metavar="PATH", help="saved HTML page(s)")
    extract.add_argument("--url", help="the page's URL (resolves links, fills url)")
    extract.add_argument("--min-chars", type=int, default=150, help="shorter bodies are skipped (default 150)")
    extract.set_defaults(func=cmd_extract)

    dedup = sub.add_parser("dedup", help="deduplicate a JSON-lines stream of texts (same core as the crawl)")
    dedup.add_argument("--input", required=True, help='JSON lines {"id", "text", "title"?}; - for standard input')
    dedup.add_argument("--output", required=True, help="verdict JSON lines; - for standard output")
    dedup.add_argument("--method", default="spotsigs", choices=("simhash", "spotsigs", "hybrid", "esimhash", "dwdcs"),
                       help="near-duplicate method (default: spotsigs)")
    dedup.add_argument("--tau", type=float, default=0.5, help="SpotSigs Jaccard threshold (default 0.5)")
    dedup.add_argument("--min-containment", type=float, default=0.8,
                       help="SpotSigs containment fallback for short versions; 0 switches it off (default 0.8)")
    dedup.add_argument("--containment-min-spots", type=int, default=10,
                       help="the smaller text needs this many spots for a containment match (default 10)")
    dedup.add_argument("--min-signatures", type=int, default=5,
                       help="SpotSigs: texts with fewer spots are neither indexed nor matched (default 5)")
    dedup.add_argument("--max-distance", type=int, default=3, help="Simhash Hamming threshold (default 3)")
    dedup.add_argument("--simhash-bits", type=int, default=64, choices=(64, 128))
    dedup.add_argument("--simhash-features", default="words", choices=("words", "word_shingles", "chars"))
    dedup.add_argument("--antecedents", default="optimized", help="basic, optimized or a file of antecedents")
    dedup.add_argument("--spot-chain", type=int, default=1, help="SpotSigs chain length n (default 1)")
    dedup.add_argument("--spot-distance", type=int, default=1, help="SpotSigs spot distance d (default 1)")
    dedup.add_argument("--esimhash-max-distance", type=int, default=10,
                       help="E-Simhash Hamming threshold of 128 bits (default 10)")
    dedup.add_argument("--weight-cap", type=float, default=90.0, help="E-Simhash word weight cap W_t (default 90)")
    dedup.add_argument("--key-concepts", type=int, default=20, help="DWDCS key concepts per document p (default 20)")
    dedup.add_argument("--hub-candidates", type=int, default=30,
                       help="DWDCS highest-degree concepts scored, l (default 30)")
    dedup.add_argument("--min-concept-frequency", type=int, default=2,
                       help="DWDCS: concepts occurring at least this often are network nodes (default 2)")
    dedup.add_argument("--concept-merge", type=float, default=0.6,
                       help="DWDCS concept merge threshold Rel_thr (default 0.6)")
    dedup.add_argument("--max-concept-nodes", type=int, default=400, help="DWDCS network size cap (default 400)")
    dedup.add_argument("--synonyms", default=None, help="DWDCS synonym file, one set per line (default: none)")
    dedup.add_argument("--dwdcs-cosine", type=float, default=0.9, help="DWDCS cosine threshold Sim_thr (default 0.9)")
    dedup.add_argument("--dwdcs-max-variance", type=float, default=0.01,
                       help="DWDCS position variance threshold S_thr (default 0.01)")
    dedup.add_argument("--min-key-concepts", type=int, default=5,
                       help="DWDCS: documents with fewer key concepts are neither indexed nor matched (default 5)")
    dedup.add_argument("--segmenter", default="auto", choices=("auto", "jieba", "rjieba"))
    dedup.add_argument("--workers", type=int, default=None, help="worker processes (default: one per core)")
    dedup.set_defaults(func=cmd_dedup)

    from newsdedup.evaluation.suite import DEFAULT_PAGE_DOCS, STAGES, data_dir_default

    ev = sub.add_parser(
        "eval", help="measure extraction and dedup quality on the shared data: results.json, report.md, plots",
        description="Reproducible benchmarks from the shared data folder: extraction against gold text, the "
        "reprint benchmark at text and page level for every method and baseline, the papers' experiments. "
        "Needs the evaluation extra (pip install -e '.[eval]').",
    )
    ev.add_argument("--data", type=Path, default=data_dir_default(),
                    help="the shared data folder (default: $NEWSDEDUP_EVAL_DATA or ../shared/data)")
    ev.add_argument("--out", type=Path, default=Path("eval-report"), help="output folder (default: eval-report)")
    ev.add_argument("--seed", type=int, default=1, help="benchmark seed (default 1)")
    ev.add_argument("--page-docs", type=int, default=DEFAULT_PAGE_DOCS,
                    help=f"pages in the page-level benchmark (default {DEFAULT_PAGE_DOCS})")
    ev.add_argument("--stages", default=",".join(STAGES),
                    help=f"comma-separated subset of {','.join(STAGES)} (default: all)")
    ev.add_argument("--workers", type=int, default=None, help="worker processes (default: one per core)")
    ev.add_argument("--no-progress", action="store_true", help="no progress bars")
    ev.add_argument("--floors", type=Path, default=None,
                    help="quality floors file (default: the packaged config/quality_floors.toml)")
    ev.add_argument("--check-floors", action="store_true", help="exit with status 1 when a figure is below its floor")
    ev.add_argument("--raise-floors", action="store_true",
                    help="tighten the floors file to this run's figures (minus --headroom); never loosens")
    ev.add_argument("--headroom", type=float, default=0.005, help="margin left below measured figures (default 0.005)")
    ev.add_argument("--lower-floor", metavar="METRIC=VALUE",
                    help="loosen one floor (needs --reason; commit it with the printed Floor-lowered: line); no run")
    ev.add_argument("--reason", help="why a floor is lowered (required with --lower-floor)")
    ev.set_defaults(func=cmd_eval)

    ante = sub.add_parser("antecedents", help="learn SpotSigs antecedent lists from pages with known text",
                          add_help=False)
    ante.set_defaults(func=cmd_antecedents)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    if argv[:1] == ["antecedents"]:
        return cmd_antecedents(argparse.Namespace(), argv[1:])
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
