"""The ``newsdedup`` command line: demo, crawl, sites, export, failures, report, monitor, serve, alerts, extract,
dedup, antecedents, eval.

``newsdedup crawl`` is the project's ``scrapy crawl portal`` (:mod:`newsdedup.crawl.commands.crawl`), runnable from any
folder; in the repository ``scrapy crawl portal`` is the same crawl.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TextIO

from newsdedup.crawl.items import ARTICLE_VERDICT_FIELDS

# The fields of a crawl's items too (what `scrapy crawl portal -O news.jsonl` writes): one format for both.
EXPORT_FIELDS = ARTICLE_VERDICT_FIELDS
EXPORT_STATUSES = ("unique", "near_duplicate", "exact_duplicate")


def _open_output(path: str) -> TextIO:
    if path == "-":
        return sys.stdout
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    return open(path, "w", encoding="utf-8")


def _dump(obj: dict, out: TextIO) -> None:
    out.write(json.dumps(obj, ensure_ascii=False) + "\n")


# -- demo ----------------------------------------------------------------------------------
def cmd_demo(args: argparse.Namespace) -> int:
    from newsdedup.demo.run import run_demo, serve_demo

    if args.serve:
        return serve_demo(sites_out=args.sites_out, port=args.port, day=args.day)
    return run_demo(storage=args.storage, workers=args.workers, verbose=args.verbose)


# -- crawl, sites --------------------------------------------------------------------------
def cmd_crawl(rest: Sequence[str]) -> int:
    from newsdedup.crawl.commands.crawl import crawl_anywhere

    return crawl_anywhere(rest)


def cmd_sites(args: argparse.Namespace) -> int:
    from newsdedup.crawl.sites import SiteConfigError, default_sites_path, load_sites

    if args.example:
        out = _open_output(args.output)
        out.write(default_sites_path().read_text(encoding="utf-8"))
        if out is not sys.stdout:
            out.close()
            print(f"wrote the packaged site file to {args.output}; "
                  f"crawl it with: newsdedup crawl --sites {args.output}", file=sys.stderr)
        return 0
    try:
        sites = load_sites(args.sites)
    except SiteConfigError as exc:
        print(f"newsdedup sites: error: {exc}", file=sys.stderr)
        return 2
    for site in sites:
        print(f"{site.name:<12} {', '.join(site.allowed_domains):<40} {' '.join(site.start_urls)}")
    print(f"{_count(len(sites), 'site')} in {args.sites or default_sites_path()}: valid", file=sys.stderr)
    return 0


def _open_existing_store(command: str, uri: str):
    """The store of ``uri``, open, or an error line (returns None) for a missing, foreign or damaged one."""
    from newsdedup.storage import StoreError, open_store

    try:
        store = open_store(uri)
    except ValueError as exc:
        print(f"newsdedup {command}: error: {exc}", file=sys.stderr)
        return None
    if uri.startswith("sqlite:///") and not Path(uri[len("sqlite:///"):]).exists():
        print(f"newsdedup {command}: error: no database at {uri}", file=sys.stderr)
        return None
    try:
        store.open()
    except StoreError as exc:
        print(f"newsdedup {command}: error: {exc.for_option('--storage ')}", file=sys.stderr)
        return None
    return store


def _since(value: str | None) -> str | None:
    from newsdedup.monitoring.timespec import parse_since

    return None if value is None else parse_since(value)


def _list_option(values: list[str] | None) -> tuple[str, ...]:
    """Repeated and/or comma-separated values: ``--site a --site b,c``."""
    return tuple(v.strip() for value in values or () for v in value.split(",") if v.strip())


# -- export --------------------------------------------------------------------------------
def cmd_export(args: argparse.Namespace) -> int:
    from newsdedup.storage import StoreError

    try:
        since = _since(args.since)
        fields = EXPORT_FIELDS if args.fields is None else _list_option([args.fields])
        if not fields:
            raise ValueError(f"--fields: no field given; choose from {','.join(EXPORT_FIELDS)}")
        unknown = [f for f in fields if f not in EXPORT_FIELDS]
        if unknown:
            raise ValueError(f"--fields: unknown field(s) {', '.join(unknown)}; choose from {','.join(EXPORT_FIELDS)}")
        statuses = _list_option(args.status)
        bad = [s for s in statuses if s not in EXPORT_STATUSES]
        if bad:
            raise ValueError(f"--status: unknown status {', '.join(bad)}; choose from {', '.join(EXPORT_STATUSES)}")
    except ValueError as exc:
        print(f"newsdedup export: error: {exc}", file=sys.stderr)
        return 2
    store = _open_existing_store("export", args.storage)
    if store is None:
        return 2
    cursor_name = f"export/{args.incremental}" if args.incremental else None
    out = _open_output(args.output)
    count = 0
    try:
        after = json.loads(store.load_state(cursor_name)) if cursor_name and store.load_state(cursor_name) else None
        cursor = after
        for row in store.iter_export(since=since, sites=_list_option(args.site), statuses=statuses,
                                     cluster=args.cluster, after=after):
            _dump({field: row[field] for field in fields}, out)
            count += 1
            cursor = row["cursor"]
        if out is not sys.stdout:
            out.close()
        else:
            out.flush()
        # Saved only once everything is written: an export that fails half way is repeated, never skipped.
        if cursor_name and cursor:
            store.save_state(cursor_name, json.dumps(cursor).encode())
    except StoreError as exc:
        print(f"newsdedup export: error: {exc.for_option('--storage ')} (after {count} article pages)", file=sys.stderr)
        return 2
    finally:
        store.close()
        if out is not sys.stdout and not out.closed:
            out.close()
    mode = f" (new since the last --incremental {args.incremental} export)" if cursor_name else ""
    print(f"exported {count} article pages{mode}", file=sys.stderr)
    return 0


# -- failures ------------------------------------------------------------------------------
FAILURE_FIELDS = ("what", "url", "site", "reason", "detail", "attempts", "last_at", "next_try_at")


def cmd_failures(args: argparse.Namespace) -> int:
    from newsdedup.run.retry import TRANSIENT_SKIPS
    from newsdedup.storage import StoreError

    store = _open_existing_store("failures", args.storage)
    if store is None:
        return 2
    try:
        rows = list(store.iter_failures(sites=_list_option(args.site), skip_reasons=TRANSIENT_SKIPS))
    except StoreError as exc:
        print(f"newsdedup failures: error: {exc.for_option('--storage ')}", file=sys.stderr)
        return 2
    finally:
        store.close()
    if args.json:
        for row in rows:
            _dump(row, sys.stdout)
    else:
        print(format_failures(rows))
    waiting = sum(1 for row in rows if row["next_try_at"])
    print(f"{len(rows)} pages: {waiting} to be tried again, {len(rows) - waiting} given up", file=sys.stderr)
    return 0


def format_failures(rows: Sequence[dict]) -> str:
    """A table of failed and transiently skipped pages: what, reason, attempts, next try, URL, detail."""
    lines = []
    for row in rows:
        next_try = row["next_try_at"] or "given up"
        lines.append(
            f"{row['what']:<8} {row['reason']:<18} {row['site'] or '-':<12} {row['attempts']:>2}  "
            f"{row['last_at']}  next {next_try:<25}  {row['url']}  ({row['detail']})"
        )
    return "\n".join(lines) if lines else "no failed or skipped pages waiting"
# -- report --------------------------------------------------------------------------------
REPORT_FORMATS = ("json", "csv", "html")


def cmd_report(args: argparse.Namespace) -> int:
    fmt = args.format or next((f for f in REPORT_FORMATS if args.output.endswith("." + f)), "json")
    try:
        since = _since(args.since)
    except ValueError as exc:
        print(f"newsdedup report: error: {exc}", file=sys.stderr)
        return 2
    store = _open_existing_store("report", args.storage)
    if store is None:
        return 2
    try:
        report = _build_report(store, since=since, sites=_list_option(args.site), min_copies=args.min_copies, query=args.query)
    except ValueError as exc:
        print(f"newsdedup report: error: {exc}", file=sys.stderr)
        return 2
    finally:
        store.close()
    _write_report(report, fmt, args.output, top=args.top)
    print(f"{report['totals']['stories']} reprinted stories, {report['totals']['copies']} copies, "
          f"{report['totals']['sites']} sites, {len(report['quoted'])} stories quoted by others ({fmt}{'' if args.output == '-' else ' in ' + args.output})",
          file=sys.stderr)
    return 0


def _build_report(store, **filters) -> dict:
    from newsdedup.monitoring.report import report_from_store
    from newsdedup.clock import now_iso

    return report_from_store(store, generated_at=now_iso(), **filters)


def _write_report(report: dict, fmt: str, output: str, *, top: int) -> None:
    """The report to standard output, or to a file replaced whole: a web server or a program reading the
    file while the monitor rewrites it sees the old report or the new one, never half of one."""
    from newsdedup.monitoring.report import render_html, write_csv

    def write(out: TextIO) -> None:
        if fmt == "json":
            out.write(json.dumps(report, ensure_ascii=False, indent=1) + "\n")
        elif fmt == "csv":
            write_csv(report, out)
        else:
            out.write(render_html(report, top=top))

    if output == "-":
        write(sys.stdout)
        return
    target = Path(output)
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")  # same folder: os.replace is atomic there
    try:
        with open(temporary, "w", encoding="utf-8", newline="") as out:
            write(out)
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


# -- monitor -------------------------------------------------------------------------------
def cmd_monitor(args: argparse.Namespace) -> int:
    import signal

    from newsdedup.monitoring.monitor import Monitor, ScheduleLock, crawl_command, schedule_lock_path
    from newsdedup.monitoring.timespec import parse_duration

    try:
        every = parse_duration(args.every)
        _since(args.report_since)  # checked now, applied after each run
        for setting in args.setting or ():
            if "=" not in setting:
                raise ValueError(f"-s takes NAME=VALUE, got {setting!r}")
        from newsdedup.run.settings_file import check_names

        check_names([setting.partition("=")[0] for setting in args.setting or ()], source="-s")
    except ValueError as exc:
        print(f"newsdedup monitor: error: {exc}", file=sys.stderr)
        return 2
    log = open(args.log, "a", encoding="utf-8") if args.log else sys.stderr  # noqa: SIM115
    command = crawl_command(storage_uri=args.storage, sites=args.sites, site=",".join(_list_option(args.site)),
                            settings=args.setting or (), settings_file=args.settings_file)
    lock = ScheduleLock(Path(args.lock) if args.lock else schedule_lock_path(args.storage))

    def after_run(status: int) -> None:
        if args.alerts:  # whatever the run's status: what it stored may match, and earlier failures are due
            _send_alerts(args.storage, args.alerts, desk_url=args.desk_url, reclaim_after="10m", say=monitor.say)
        if not args.report:
            return
        from newsdedup.storage import StoreError

        # A report that cannot be written (a full disk, a folder without permission, a damaged database) is
        # logged; the monitor keeps crawling, and the next run writes it again.
        try:
            store = _open_existing_store("monitor", args.storage)
            if store is None:
                monitor.say(f"report not written to {args.report}: the database could not be opened")
                return
            try:
                since = _since(args.report_since)
                report = _build_report(store, since=since, min_copies=1, query=None)
            finally:
                store.close()
            _write_report(report, next((f for f in REPORT_FORMATS if args.report.endswith("." + f)), "html"),
                          args.report, top=args.top)
        except (OSError, StoreError) as exc:
            detail = exc.for_option("--storage ") if isinstance(exc, StoreError) else exc
            monitor.say(f"report not written to {args.report}: {detail}")
            return
        monitor.say(f"report written to {args.report} ({report['totals']['stories']} stories since {since})")

    try:
        monitor = Monitor(command, every=every, lock=lock, log=log, runs=args.runs, after_run=after_run)
    except ValueError as exc:
        print(f"newsdedup monitor: error: {exc}", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, monitor.stop)
    signal.signal(signal.SIGINT, monitor.stop)
    monitor.say(f"every {args.every}, lock {lock.path}; stop with Ctrl-C or SIGTERM")
    try:
        return monitor.run()
    finally:
        if log is not sys.stderr:
            log.close()


# -- serve ---------------------------------------------------------------------------------
LOOPBACK = ("127.0.0.1", "localhost", "::1")


def cmd_serve(args: argparse.Namespace) -> int:
    token = args.token or os.environ.get("NEWSDEDUP_SERVE_TOKEN") or None
    if not 0 < args.poll <= 86400:
        print(f"newsdedup serve: error: --poll {args.poll:g}: give a number of seconds from 0.1 to 86400",
              file=sys.stderr)
        return 2
    if args.host not in LOOPBACK and not token:
        print(f"newsdedup serve: error: --host {args.host} opens the desk to other machines: give it a --token "
              "(or NEWSDEDUP_SERVE_TOKEN), or keep the default 127.0.0.1", file=sys.stderr)
        return 2
    try:
        import uvicorn

        from newsdedup.serve.app import create_app
        from newsdedup.serve.store import open_readonly
    except ImportError as exc:
        print(f"newsdedup serve: error: no module {exc.name}; the desk needs the serve extra: "
              "pip install 'newsdedup[serve]'", file=sys.stderr)
        return 2
    from newsdedup.storage import StoreError

    try:
        store = open_readonly(args.storage)
    except StoreError as exc:
        print(f"newsdedup serve: error: {exc}", file=sys.stderr)
        return 2
    try:
        host = f"[{args.host}]" if ":" in args.host else args.host
        print(f"newsdedup desk on http://{host}:{args.port}/ over {store.name} (read-only); stop with Ctrl-C",
              file=sys.stderr, flush=True)
        app = create_app(store, token=token, poll_seconds=args.poll,
                         watches=Path(args.watches) if args.watches else None)
        uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level,
                    server_header=False)
    finally:
        store.close()
    return 0


# -- alerts --------------------------------------------------------------------------------
def _send_alerts(storage: str, watches_file: str, *, desk_url: str | None, reclaim_after: str,
                 say) -> int:
    """One run of ``newsdedup alerts``: ``say`` gets each line; returns the exit status (0, 1 a delivery failed,
    2 nothing could be done)."""
    from newsdedup.monitoring.alerts import WatchError, load_watches, run_alerts
    from newsdedup.monitoring.timespec import parse_duration
    from newsdedup.storage import StoreError

    try:
        watches = load_watches(watches_file)
        reclaim = parse_duration(reclaim_after)
    except (WatchError, ValueError, OverflowError) as exc:
        say(f"error: {exc}")
        return 2
    try:
        import apprise  # noqa: F401 - checked before the store is touched
    except ImportError:
        say("error: no module apprise; alerts need the serve extra: pip install 'newsdedup[serve]'")
        return 2
    store = _open_existing_store("alerts", storage)
    if store is None:
        return 2
    try:
        result = run_alerts(store, watches, desk_url=desk_url, reclaim_after=reclaim)
    except StoreError as exc:
        say(f"error: {exc}")
        return 2
    finally:
        store.close()
    for error in result.errors:
        say(error)
    say(result.summary())
    return 1 if result.failed else 0


def cmd_alerts(args: argparse.Namespace) -> int:
    return _send_alerts(args.storage, args.watches, desk_url=args.desk_url, reclaim_after=args.reclaim_after,
                        say=lambda line: print(f"newsdedup alerts: {line}", file=sys.stderr))


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
def _read_docs(stream: TextIO, bad: list[str]) -> Iterator[tuple[str | int, str]]:
    for number, line in enumerate(stream, 1):
        if not line.strip():
            continue
        try:
            doc = json.loads(line)
            doc_id, text = doc["id"], doc["text"]
            if not isinstance(text, str):
                raise TypeError("text is not a string")
            if isinstance(doc_id, bool) or not isinstance(doc_id, (str, int)):
                raise TypeError("id is not a string or an integer")
        except (ValueError, KeyError, TypeError) as exc:
            bad.append(f"line {number}: {type(exc).__name__}: {exc}")
            continue
        # The title is not part of the fingerprint: reprints rewrite headlines far more than bodies. With the site
        # and publication time it tells the passage-reuse stage a site's boilerplate and who quotes whom.
        # The id is kept as given (string or integer), so duplicate_of and cluster_id have its type.
        about = {key: doc[key] for key in ("title", "site", "published_at") if isinstance(doc.get(key), str)}
        yield doc_id, text, about


def cmd_dedup(args: argparse.Namespace) -> int:
    from newsdedup.api import Deduplicator, parameter_of

    parameters = {parameter_of(name): getattr(args, dest) for dest, name, *_ in DEDUP_OPTIONS
                  if getattr(args, dest) is not None}
    try:
        dedup = Deduplicator(**parameters)
    except ValueError as exc:
        print(f"newsdedup dedup: {exc}", file=sys.stderr)
        return 2
    source = sys.stdin if args.input == "-" else open(args.input, encoding="utf-8")
    out = _open_output(args.output)
    bad: list[str] = []
    counts = {"unique": 0, "near_duplicate": 0, "exact_duplicate": 0}
    try:
        for verdict in dedup.add_many(_read_docs(source, bad), workers=args.workers):
            counts[verdict.status] += 1
            _dump(dataclasses.asdict(verdict), out)
    finally:
        if source is not sys.stdin:
            source.close()
        if out is not sys.stdout:
            out.close()
    for message in bad[:20]:
        print(f"skipped input {message}", file=sys.stderr)
    print(
        f"{_count(sum(counts.values()), 'document')}: {counts['unique']} unique, "
        f"{_count(counts['near_duplicate'], 'near duplicate')}, {_count(counts['exact_duplicate'], 'exact duplicate')}; "
        f"{_count(len(bad), 'bad input line')} skipped",
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
        print(f"newsdedup eval: error: no module {exc.name}; the evaluation needs the eval extra: "
              "pip install 'newsdedup[eval]'", file=sys.stderr)
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
                                 stages=parse_stages(args.stages), workers=args.workers, progress=not args.no_progress,
                                 distributed=args.distributed, redis_url=args.redis_url, storage_uri=args.storage_uri)
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


# `newsdedup dedup` flags: each sets one NEWSDEDUP_* setting, so the stream is deduplicated with exactly the
# options a crawl would use (newsdedup.run.options reads both; the defaults live in newsdedup/defaults.py).
DEDUP_OPTIONS: tuple[tuple[str, str, object, str], ...] = (
    ("method", "NEWSDEDUP_NEAR_METHOD", ("simhash", "spotsigs", "hybrid", "esimhash", "dwdcs"), "near-duplicate method"),
    ("tau", "NEWSDEDUP_SPOTSIGS_TAU", float, "SpotSigs multiset Jaccard threshold"),
    ("min_containment", "NEWSDEDUP_SPOTSIGS_MIN_CONTAINMENT", str,
     "SpotSigs containment fallback for short versions; none switches it off"),
    ("containment_min_spots", "NEWSDEDUP_SPOTSIGS_CONTAINMENT_MIN_SPOTS", int,
     "the smaller text needs this many spots for a containment match"),
    ("containment_whole_below", "NEWSDEDUP_SPOTSIGS_CONTAINMENT_WHOLE_BELOW", str,
     "a containment match whose smaller text is under this share of the larger needs it wholly contained; "
     "none (default) switches it off"),
    ("containment_min_share", "NEWSDEDUP_SPOTSIGS_CONTAINMENT_MIN_SHARE", str,
     "a containment match needs the shared spots to be this share of the longer text's (else it is a reuse); "
     "none switches it off"),
    ("min_signatures", "NEWSDEDUP_SPOTSIGS_MIN_SIGNATURES", int, "texts with fewer spots are neither indexed nor matched"),
    ("reuse", "NEWSDEDUP_REUSE", ("true", "false"),
     "record the passages a text shares with earlier stories (each line's reuses); false switches it off"),
    ("max_distance", "NEWSDEDUP_SIMHASH_MAX_DISTANCE", int, "Simhash Hamming threshold"),
    ("simhash_bits", "NEWSDEDUP_SIMHASH_BITS", int, "Simhash width, 64 or 128"),
    ("simhash_features", "NEWSDEDUP_SIMHASH_FEATURES", ("words", "word_shingles", "chars"), "Simhash features"),
    ("antecedents", "NEWSDEDUP_SPOTSIGS_ANTECEDENTS", str, "SpotSigs antecedents: basic, optimized or a file"),
    ("spot_chain", "NEWSDEDUP_SPOTSIGS_CHAIN", int, "SpotSigs chain length n"),
    ("spot_distance", "NEWSDEDUP_SPOTSIGS_DISTANCE", int, "SpotSigs spot distance d"),
    ("esimhash_max_distance", "NEWSDEDUP_ESIMHASH_MAX_DISTANCE", int, "E-Simhash Hamming threshold of 128 bits"),
    ("weight_cap", "NEWSDEDUP_ESIMHASH_WEIGHT_CAP", float, "E-Simhash word weight cap W_t"),
    ("key_concepts", "NEWSDEDUP_DWDCS_KEY_CONCEPTS", int, "DWDCS key concepts per document p"),
    ("hub_candidates", "NEWSDEDUP_DWDCS_HUB_CANDIDATES", int, "DWDCS highest-degree concepts scored, l"),
    ("min_concept_frequency", "NEWSDEDUP_DWDCS_MIN_FREQUENCY", int, "DWDCS: concepts this frequent are network nodes"),
    ("concept_merge", "NEWSDEDUP_DWDCS_MERGE_THRESHOLD", float, "DWDCS concept merge threshold Rel_thr"),
    ("max_concept_nodes", "NEWSDEDUP_DWDCS_MAX_NODES", int, "DWDCS network size cap"),
    ("synonyms", "NEWSDEDUP_DWDCS_SYNONYMS", str, "DWDCS synonym file, one set per line"),
    ("dwdcs_cosine", "NEWSDEDUP_DWDCS_COSINE", float, "DWDCS cosine threshold Sim_thr"),
    ("dwdcs_max_variance", "NEWSDEDUP_DWDCS_MAX_VARIANCE", float, "DWDCS position variance threshold S_thr"),
    ("min_key_concepts", "NEWSDEDUP_DWDCS_MIN_KEY_CONCEPTS", int,
     "DWDCS: documents with fewer key concepts are neither indexed nor matched"),
    ("segmenter", "NEWSDEDUP_SEGMENTER", ("auto", "jieba", "rjieba"), "word segmenter"),
)


def _version() -> str:
    import importlib.metadata

    try:
        return importlib.metadata.version("newsdedup")
    except importlib.metadata.PackageNotFoundError:  # running from a checkout that was not installed
        return "unknown (not installed)"


def _count(n: int, noun: str) -> str:
    """``1 document``, ``2 documents``."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _default(name: str):
    from newsdedup.run import options

    return options.default(name)


def _default_shown(name: str) -> str:
    value = _default(name)
    return "none" if value is None else str(value)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="newsdedup",
        description="Crawl Chinese news portals and deduplicate articles inline. "
        "Crawl with `newsdedup crawl` (in the repository also `scrapy crawl portal`).",
    )
    parser.add_argument("--version", action="version", version=f"newsdedup {_version()}")
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", help="crawl the bundled offline mini-portal on 127.0.0.1 and print a summary")
    demo.add_argument("--storage", default=None,
                      help="storage URI for the demo database (default: a new temporary SQLite file)")
    demo.add_argument("--workers", type=int, default=None, help="worker processes (default: one per core)")
    demo.add_argument("--verbose", action="store_true", help="show Scrapy's log")
    demo.add_argument("--serve", action="store_true",
                      help="only serve the mini-portal on 127.0.0.1 until Ctrl-C, to crawl it yourself")
    demo.add_argument("--sites-out", default="demo-sites.toml", metavar="FILE",
                      help="with --serve: where to write the portal's site file (default: %(default)s)")
    demo.add_argument("--port", type=int, default=0, help="with --serve: the port (default: any free one)")
    demo.add_argument("--day", type=int, choices=(1, 2), default=1,
                      help="with --serve: the portal's day (2 adds new articles and reprints; default: 1)")
    demo.set_defaults(func=cmd_demo)

    # Parsed by the crawl command itself (Scrapy's options): `newsdedup crawl --help` lists them.
    sub.add_parser("crawl", add_help=False,
                   help="crawl the portals into the database, from any folder: the same crawl as `scrapy crawl "
                   "portal` (-s NAME=VALUE, --settings FILE, --sites FILE, -a site=NAME, -O FILE; see --help)")
    sites = sub.add_parser(
        "sites", help="check and list a site file, or print the packaged one to edit (--example > sites.toml)",
        description="Checks a site file as the crawl does and lists its portals (name, allowed domains, start "
        "pages); a broken file is one line naming the entry and the key, exit status 2.",
    )
    sites.add_argument("--sites", metavar="FILE", help="the site file (default: the packaged one)")
    sites.add_argument("--example", action="store_true",
                       help="write out the packaged site file, to edit and crawl with --sites FILE")
    sites.add_argument("--output", "-o", default="-", help="--example: output file (default: standard output)")
    sites.set_defaults(func=cmd_sites)

    storage_default = _default_shown("NEWSDEDUP_STORAGE_URI")
    storage_help = "storage URI, e.g. sqlite:///news.sqlite (default: the crawl's, %(default)s)"
    since_help = "only what was fetched in this window: a duration back from now (24h, 7d) or a date/time " \
                 "(2026-11-16, 2026-11-16T08:00; China time unless an offset is given)"
    export = sub.add_parser("export", help="JSON lines, one per article page fetched (articles and exact repeats)",
                            description="JSON lines, one per article page fetched, in fetch order, filtered.")
    export.add_argument("--storage", default=storage_default, help=storage_help)
    export.add_argument("--output", "-o", default="-", help="output file (default: standard output)")
    export.add_argument("--since", help=since_help)
    export.add_argument("--site", action="append", help="only these sites (repeat or comma-separate)")
    export.add_argument("--status", action="append",
                        help=f"only these statuses: {', '.join(EXPORT_STATUSES)} (repeat or comma-separate)")
    export.add_argument("--cluster", type=int, help="only the pages of this cluster (story) id")
    export.add_argument("--fields", help=f"comma-separated fields to write, e.g. url,site,status,origin_url "
                        f"(default: all: {','.join(EXPORT_FIELDS)})")
    export.add_argument("--incremental", nargs="?", const="default", metavar="NAME",
                        help="only pages stored since the last --incremental export of this NAME (default "
                        "'default'); the position is kept in the database")
    export.set_defaults(func=cmd_export)

    failures = sub.add_parser(
        "failures", help="pages that could not be fetched or analysed: reason, attempts, when they are tried again",
        description="Lists the failures table (HTTP errors, over-size downloads, redirect loops, network errors) and "
        "pages skipped for a transient reason (empty, too_short, malformed, error, timeout, crashed), newest first. "
        "Later crawls fetch each again from its next-try time, until it has had NEWSDEDUP_RETRY_MAX_ATTEMPTS.",
    )
    failures.add_argument("--storage", default=_default_shown("NEWSDEDUP_STORAGE_URI"),
                          help="storage URI (default: the crawl's, %(default)s)")
    failures.add_argument("--site", action="append", help="only these sites (repeat or comma-separate)")
    failures.add_argument("--json", action="store_true", help=f"JSON lines with {', '.join(FAILURE_FIELDS)}")
    failures.set_defaults(func=cmd_failures)
    report = sub.add_parser(
        "report", help="reprinted stories: origin (who published first), copies, sites, quotations; JSON, CSV or HTML",
        description="Reprint clusters with at least --min-copies copies: each story's origin (the copy "
        "published first) and every copy (site, time, exact or near, similarity), counts per site and which "
        "sites copy from which; and the stories later pages quoted a passage of, with the pages and passages "
        "(not in the CSV). JSON (schema: newsdedup.monitoring.report.REPORT_SCHEMA) and CSV (one row per copy) for "
        "programs, one self-contained HTML page for people.",
    )
    report.add_argument("--storage", default=storage_default, help=storage_help)
    report.add_argument("--since", help="stories with a copy fetched in this window: " + since_help.split(": ", 1)[1])
    report.add_argument("--site", action="append",
                        help="only stories with a page on one of these sites (repeat or comma-separate)")
    report.add_argument("--min-copies", type=int, default=1, help="stories with at least this many copies (default 1)")
    report.add_argument("--query", help="only stories whose title or text contains this (case-insensitive)")
    report.add_argument("--format", choices=REPORT_FORMATS,
                        help="json, csv or html (default: from the --output suffix, else json)")
    report.add_argument("--output", "-o", default="-", help="output file (default: standard output)")
    report.add_argument("--top", type=int, default=20, help="HTML: stories shown (default 20)")
    report.set_defaults(func=cmd_report)

    monitor = sub.add_parser(
        "monitor", help="crawl every N minutes, never two runs at once (a lock), optionally refreshing a report",
        description="Runs `newsdedup crawl` at a fixed rate in fresh processes. Each run takes an exclusive "
        "flock on the schedule lock file (default: <database>.schedule.lock, the file the documented crontab line "
        "locks too); a run that finds it held is skipped. SIGTERM/Ctrl-C stops after the running crawl.",
    )
    monitor.add_argument("--every", required=True, help="interval between run starts: 10m, 1h, 90s")
    monitor.add_argument("--storage", default=storage_default, help=storage_help)
    monitor.add_argument("--sites", metavar="FILE", help="site file (default: the shipped config/sites.toml)")
    monitor.add_argument("--site", action="append", help="only these sites of the file (repeat or comma-separate)")
    monitor.add_argument("-s", "--set", dest="setting", action="append", metavar="NAME=VALUE",
                         help="a Scrapy or NEWSDEDUP_* setting for every run (repeat)")
    monitor.add_argument("--settings", dest="settings_file", metavar="FILE",
                         help="a TOML settings file for every run (as newsdedup crawl --settings; -s overrides it)")
    monitor.add_argument("--log", help="append the monitor's and the crawls' output to this file (default: stderr)")
    monitor.add_argument("--lock", help="the schedule lock file (default: <database>.schedule.lock)")
    monitor.add_argument("--report", metavar="FILE", help="after each run write the report here (.html, .json, .csv)")
    monitor.add_argument("--report-since", default="24h", help="the report's window (default 24h)")
    monitor.add_argument("--top", type=int, default=20, help="HTML report: stories shown (default 20)")
    monitor.add_argument("--alerts", metavar="FILE",
                         help="after each run send the watches' new matches (as newsdedup alerts --watches FILE)")
    monitor.add_argument("--desk-url", metavar="URL", help="with --alerts: the desk's address for links in alerts")
    monitor.add_argument("--runs", type=int, help="stop after this many crawls; a tick skipped for the lock is not one "
                         "(default: until stopped)")
    monitor.set_defaults(func=cmd_monitor)

    serve = sub.add_parser(
        "serve", help="the monitoring desk: what spreads now, stories, sites, search, in a browser (read-only)",
        description="A web desk over the store, read-only: Now (stories spreading in a window), each story with "
        "its copies, quotations and diffs, each site's record and crawl health, full-text search; the same data as "
        "JSON under /api/ (docs/desk.md). Needs the serve extra: pip install 'newsdedup[serve]'.",
    )
    serve.add_argument("--storage", default=storage_default, help=storage_help)
    serve.add_argument("--host", default="127.0.0.1",
                       help="address to listen on (default %(default)s; any other needs --token)")
    serve.add_argument("--port", type=int, default=8321, help="port (default %(default)s)")
    serve.add_argument("--token", help="require this token on every request (Authorization: Bearer TOKEN, or "
                       "basic auth with it as password); default: $NEWSDEDUP_SERVE_TOKEN")
    serve.add_argument("--poll", type=float, default=30.0, metavar="SECONDS",
                       help="how often an open page asks whether new crawl runs have landed (default %(default)g)")
    serve.add_argument("--watches", metavar="FILE",
                       help="the watches file (as newsdedup alerts --watches): listed on /watches, where a form adds one")
    serve.add_argument("--log-level", default="warning", choices=("critical", "error", "warning", "info", "debug"),
                       help="the web server's log level (default %(default)s)")
    serve.set_defaults(func=cmd_serve)

    alerts = sub.add_parser(
        "alerts", help="send the new matches of saved searches (watches) through Apprise: for cron or after a run",
        description="Each watch of the file (docs/desk.md#watches-and-alerts) is a search; its new matching stories, "
        "or stories crossing its sites or copies threshold, are sent to its Apprise URLs (JSON webhook, DingTalk, "
        "WeCom, Feishu, mail...), at least once, each with an idempotency key. A failed delivery is sent again by "
        "the next run; exit status 1 when one failed.",
    )
    alerts.add_argument("--storage", default=storage_default, help=storage_help)
    alerts.add_argument("--watches", required=True, metavar="FILE", help="the watches file (TOML, [[watch]] tables)")
    alerts.add_argument("--desk-url", metavar="URL",
                        help="the desk's address for links in the alerts (default: the origin page's URL)")
    alerts.add_argument("--reclaim-after", default="10m", metavar="DURATION",
                        help="an alert a killed run was sending is sent again after this (default %(default)s)")
    alerts.set_defaults(func=cmd_alerts)

    extract = sub.add_parser("extract", help="extract the article of saved HTML pages as JSON lines")
    extract.add_argument("paths", nargs="+", metavar="PATH", help="saved HTML page(s)")
    extract.add_argument("--url", help="the page's URL (resolves links, fills url)")
    extract.add_argument("--min-chars", type=int, default=_default("NEWSDEDUP_EXTRACT_MIN_CHARS"),
                         help="shorter bodies are skipped (default %(default)s; setting NEWSDEDUP_EXTRACT_MIN_CHARS)")
    extract.set_defaults(func=cmd_extract)

    dedup = sub.add_parser("dedup", help="deduplicate a JSON-lines stream of texts (same core as the crawl)")
    dedup.add_argument("--input", required=True,
                       help='JSON lines {"id", "text", "title"?, "site"?, "published_at"?}; - for standard input')
    dedup.add_argument("--output", required=True, help="verdict JSON lines; - for standard output")
    for dest, name, kind, text in DEDUP_OPTIONS:
        flag = "--" + dest.replace("_", "-")
        shown = _default_shown(name)
        extra = {"choices": kind} if isinstance(kind, tuple) else {"type": kind}
        dedup.add_argument(flag, dest=dest, default=None, help=f"{text} (default {shown}; setting {name})", **extra)
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
    ev.add_argument("--distributed", type=int, default=0, metavar="N",
                    help="also crawl the page level's pages with N processes (2 or more) sharing --redis-url and "
                         "--storage-uri, as a distributed crawl does; results under page_level_distributed")
    ev.add_argument("--redis-url", help="Redis of the distributed page-level crawl (redis://HOST:PORT/DB)")
    ev.add_argument("--storage-uri", help="an empty PostgreSQL database for the distributed page-level crawl "
                                          "(postgresql://USER@HOST:PORT/DBNAME)")
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
    if argv[:1] == ["crawl"]:
        return cmd_crawl(argv[1:])
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except BrokenPipeError:
        # The reader went away (`newsdedup export | head`): stop quietly, as a Unix filter does, with the
        # status a shell gives a process SIGPIPE ended (128 + 13). An --incremental export has saved no position.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # Python's flush at exit would raise again
        return 141


if __name__ == "__main__":
    sys.exit(main())
