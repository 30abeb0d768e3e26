"""Quality floors: the worst figures ``newsdedup eval`` may measure before CI fails.

The floors live in a TOML file (the packaged default is ``config/quality_floors.toml``) with a
``[minimum]`` table (higher is better: measured >= floor) and a ``[maximum]`` table (lower is
better: measured <= ceiling).  Keys are quoted dotted paths into the eval's ``results.json``.

Floors move one way easily and the other way only on purpose:

* :func:`raise_floors` tightens floors to the measured figures (less a headroom) and never loosens;
* :func:`lower_floor` loosens one floor, needs a reason and prints the commit trailer
  ``Floor-lowered: <metric> <old> -> <new>: <reason>``;
* :func:`loosened_without_reason` walks the git history of the file and names every commit that
  loosened (or removed) a floor without that trailer.

>>> floors = parse_floors('[minimum]\\n"a.f1" = 0.9\\n[maximum]\\n"a.leaks" = 2\\n')
>>> [(c.metric, c.kind, c.passed) for c in check_floors({"a": {"f1": 0.95, "leaks": 3}}, floors)]
[('a.f1', 'min', True), ('a.leaks', 'max', False)]
"""

from __future__ import annotations

import argparse
import importlib.resources
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from pathlib import Path
from typing import Literal

__all__ = [
    "DEFAULT_FLOORS_RESOURCE",
    "TRAILER_KEY",
    "FloorChange",
    "FloorResult",
    "Floors",
    "HistoryUnavailable",
    "check_floors",
    "floor_lowered_trailer",
    "format_check",
    "load_floors",
    "loosened_without_reason",
    "lower_floor",
    "main",
    "measured_value",
    "parse_floors",
    "raise_floors",
]

DEFAULT_FLOORS_RESOURCE = "quality_floors.toml"  # inside the package newsdedup.config (config/ in the repo)
TRAILER_KEY = "Floor-lowered"

Kind = Literal["min", "max"]
Number = int | float

_TABLE_KINDS: dict[str, Kind] = {"minimum": "min", "maximum": "max"}
_KIND_TABLES: dict[Kind, str] = {kind: table for table, kind in _TABLE_KINDS.items()}
_THOUSANDTH = Decimal("0.001")


@dataclass(frozen=True)
class Floors:
    """Floors by metric path: ``minimum`` (measured must be >=) and ``maximum`` (measured must be <=)."""

    minimum: Mapping[str, Number] = field(default_factory=dict)
    maximum: Mapping[str, Number] = field(default_factory=dict)
    source: str = "<text>"

    def entries(self) -> Iterator[tuple[str, Kind, Number]]:
        """Every floor as ``(metric, kind, value)``, minimums first, in file order."""
        for metric, value in self.minimum.items():
            yield metric, "min", value
        for metric, value in self.maximum.items():
            yield metric, "max", value

    def table(self, kind: Kind) -> Mapping[str, Number]:
        return self.minimum if kind == "min" else self.maximum

    def __len__(self) -> int:
        return len(self.minimum) + len(self.maximum)


@dataclass(frozen=True)
class FloorResult:
    """One floor checked against the results: ``measured`` is None when the results lack the metric."""

    metric: str
    kind: Kind
    floor: Number
    measured: Number | None
    passed: bool

    @property
    def verdict(self) -> str:
        if self.measured is None:
            return "FAIL: not measured"
        if self.passed:
            return "ok"
        return "FAIL: below minimum" if self.kind == "min" else "FAIL: above maximum"


@dataclass(frozen=True)
class FloorChange:
    """A floor moved from ``old`` to ``new`` (``reason`` is set when it was lowered)."""

    metric: str
    kind: Kind
    old: Number
    new: Number
    reason: str | None = None

    @property
    def trailer(self) -> str:
        """The commit-message line a lowering needs (see :func:`floor_lowered_trailer`)."""
        if self.reason is None:
            raise ValueError(f"{self.metric}: only a lowered floor has a trailer (it has no reason)")
        return floor_lowered_trailer(self.metric, self.old, self.new, self.reason)


class HistoryUnavailable(RuntimeError):
    """git is missing, or the folder is not inside a git work tree."""


# --------------------------------------------------------------------------- reading


def _is_number(value: object) -> bool:
    # bool is an int subclass; a floor of `true` is a typo, not a number.
    return isinstance(value, int | float) and not isinstance(value, bool)


def _format_number(value: Number) -> str:
    return str(value) if isinstance(value, int) else repr(float(value))


def parse_floors(text: str, source: str = "<text>") -> Floors:
    """Floors from the text of a floors file; ``source`` names it in error messages."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ValueError(f"{source}: not valid TOML ({error}); fix the syntax") from error
    unknown = sorted(set(document) - set(_TABLE_KINDS))
    if unknown:
        raise ValueError(f"{source}: unknown top-level keys {unknown}; put floors under [minimum] or [maximum]")
    tables: dict[str, dict[str, Number]] = {}
    for table_name in _TABLE_KINDS:
        table = document.get(table_name, {})
        if not isinstance(table, dict):
            raise ValueError(f"{source}: {table_name} must be a table: write [{table_name}] on its own line")
        for metric, value in table.items():
            if isinstance(value, dict):
                raise ValueError(
                    f"{source}: [{table_name}] {metric} is a nested table; quote the dotted metric path, "
                    f'e.g. "{metric}.f1" = 0.9'
                )
            if not _is_number(value) or not math.isfinite(value):
                raise ValueError(f"{source}: [{table_name}] {metric!r} = {value!r}; a floor must be a finite number")
        tables[table_name] = dict(table)
    for metric in tables["minimum"].keys() & tables["maximum"].keys():
        if tables["minimum"][metric] > tables["maximum"][metric]:
            raise ValueError(
                f"{source}: {metric!r} has minimum {tables['minimum'][metric]} above maximum "
                f"{tables['maximum'][metric]}; no figure could pass, fix one of them"
            )
    return Floors(minimum=tables["minimum"], maximum=tables["maximum"], source=source)


def default_floors_path() -> Path:
    """The packaged floors file (``config/quality_floors.toml`` in a checkout or an editable install)."""
    return Path(str(importlib.resources.files("newsdedup.config").joinpath(DEFAULT_FLOORS_RESOURCE)))


def load_floors(path: Path | None = None) -> Floors:
    """Floors from ``path``, or from the packaged default ``newsdedup.config/quality_floors.toml``."""
    if path is None:
        resource = importlib.resources.files("newsdedup.config") / DEFAULT_FLOORS_RESOURCE
        return parse_floors(resource.read_text(encoding="utf-8"), source=f"newsdedup.config/{DEFAULT_FLOORS_RESOURCE}")
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"floors file {path} does not exist; pass an existing file, or none for the packaged default")
    return parse_floors(path.read_text(encoding="utf-8"), source=str(path))


# --------------------------------------------------------------------------- checking


def measured_value(results: Mapping, metric: str) -> Number | None:
    """The number at dotted path ``metric`` in ``results``, or None when absent or not a number.

    >>> measured_value({"a": {"b": 0.5}}, "a.b"), measured_value({"a": {}}, "a.b")
    (0.5, None)
    """
    node: object = results
    for key in metric.split("."):
        if not isinstance(node, Mapping) or key not in node:
            return None
        node = node[key]
    return node if _is_number(node) else None


def check_floors(results: Mapping, floors: Floors) -> list[FloorResult]:
    """Every floor checked against ``results`` (the parsed results.json); a missing metric fails.

    NaN fails every floor (it compares false).
    """
    if not isinstance(results, Mapping):
        raise ValueError(f"results must be the parsed results.json mapping, got {type(results).__name__}")
    checks = []
    for metric, kind, floor in floors.entries():
        measured = measured_value(results, metric)
        if measured is None:
            passed = False
        elif kind == "min":
            passed = measured >= floor
        else:
            passed = measured <= floor
        checks.append(FloorResult(metric=metric, kind=kind, floor=floor, measured=measured, passed=passed))
    return checks


def format_check(checks: Sequence[FloorResult]) -> str:
    """A small plain-text table of :func:`check_floors` results, with a summary line."""
    header = ("metric", "kind", "floor", "measured", "result")
    rows = [
        (
            check.metric,
            check.kind,
            _format_number(check.floor),
            "-" if check.measured is None else _format_measured(check.measured),
            check.verdict,
        )
        for check in checks
    ]
    widths = [max(len(row[column]) for row in [header, *rows]) for column in range(len(header))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in [header, *rows]]
    failed = sum(not check.passed for check in checks)
    lines.append(f"{len(checks)} floors: {len(checks) - failed} passed, {failed} failed")
    return "\n".join(lines)


def _format_measured(value: Number) -> str:
    return str(value) if isinstance(value, int) else f"{value:.4f}"


# --------------------------------------------------------------------------- moving floors


def floor_lowered_trailer(metric: str, old: Number, new: Number, reason: str) -> str:
    """``Floor-lowered: <metric> <old> -> <new>: <reason>``, the line a loosening commit must carry."""
    return f"{TRAILER_KEY}: {metric} {_format_number(old)} -> {_format_number(new)}: {reason}"


def _tightened(kind: Kind, measured: Number, headroom: float, old: Number) -> Number:
    """The floor ``headroom`` short of ``measured``, rounded towards the loose side so it never passes it."""
    # Decimal from repr: 0.936 - 0.006 in binary floats lands a hair below 0.93 and would round down to 0.929.
    if kind == "min":
        target = Decimal(repr(measured)) - Decimal(repr(headroom))
    else:
        target = Decimal(repr(measured)) + Decimal(repr(headroom))
    rounding = ROUND_FLOOR if kind == "min" else ROUND_CEILING
    if isinstance(old, int) and float(measured).is_integer():
        # Counts (passed snippets, leaking pages) stay whole numbers.
        return int(target.quantize(Decimal(1), rounding=rounding))
    return float(target.quantize(_THOUSANDTH, rounding=rounding))


def raise_floors(results: Mapping, path: Path, *, headroom: float) -> list[FloorChange]:
    """Tighten the floors in ``path`` to the measured figures less ``headroom``; never loosens.

    A minimum moves up to ``measured - headroom`` (rounded down to 3 decimals), a maximum down to
    ``measured + headroom`` (rounded up); a floor only moves when that is tighter than it is now.
    Whole-number floors of whole-number figures stay whole.  Metrics missing from ``results`` are
    left alone.  The file is rewritten in place, comments and order kept.  Returns what moved.
    """
    if not _is_number(headroom) or not math.isfinite(headroom) or headroom < 0:
        raise ValueError(f"headroom must be a finite number >= 0 (e.g. 0.005), got {headroom!r}")
    if not isinstance(results, Mapping):
        raise ValueError(f"results must be the parsed results.json mapping, got {type(results).__name__}")
    path = Path(path)
    floors = load_floors(path)
    changes = []
    for metric, kind, old in floors.entries():
        measured = measured_value(results, metric)
        if measured is None or not math.isfinite(measured):
            continue
        new = _tightened(kind, measured, headroom, old)
        if (kind == "min" and new > old) or (kind == "max" and new < old):
            changes.append(FloorChange(metric=metric, kind=kind, old=old, new=new))
    if changes:
        _rewrite(path, floors, changes)
    return changes


def lower_floor(path: Path, metric: str, value: Number, *, reason: str, kind: Kind | None = None) -> FloorChange:
    """Loosen one floor in ``path`` to ``value`` and print the commit trailer the committer must use.

    ``reason`` is required (one line; it goes into the trailer).  ``kind`` picks the table when the
    metric has both a minimum and a maximum.  Refuses a value that would not loosen the floor.
    """
    if not isinstance(reason, str) or not reason.strip():
        raise ValueError("lowering a floor needs a reason: pass reason='why the figure may drop' (it goes in the commit)")
    if "\n" in reason or "\r" in reason:
        raise ValueError("reason must be one line: it becomes the commit trailer")
    reason = reason.strip()
    if not _is_number(value) or not math.isfinite(value):
        raise ValueError(f"value must be a finite number, got {value!r}")
    if kind is not None and kind not in _KIND_TABLES:
        raise ValueError(f"kind must be 'min' or 'max', got {kind!r}")
    path = Path(path)
    floors = load_floors(path)
    kinds = [k for k in _KIND_TABLES if metric in floors.table(k) and kind in (None, k)]
    if not kinds:
        known = sorted({m for m, _, _ in floors.entries()})
        which = f"{kind} floor" if kind else "floor"
        raise ValueError(f"{path} has no {which} for {metric!r}; floors there: {known}")
    if len(kinds) > 1:
        raise ValueError(f"{metric!r} has both a minimum and a maximum in {path}; pass kind='min' or kind='max'")
    (chosen,) = kinds
    old = floors.table(chosen)[metric]
    if (chosen == "min" and not value < old) or (chosen == "max" and not value > old):
        direction = "below" if chosen == "min" else "above"
        raise ValueError(
            f"{metric} {chosen} {_format_number(old)} -> {_format_number(value)} does not lower the floor "
            f"(the new value must be {direction} the old); to tighten use raise_floors or edit the file"
        )
    change = FloorChange(metric=metric, kind=chosen, old=old, new=value, reason=reason)
    _rewrite(path, floors, [change])
    print(f"Lowered {metric} ({chosen}) in {path}. The commit must carry this line in its message:")
    print(change.trailer)
    return change


_TABLE_LINE = re.compile(r"^\s*\[\s*(?P<name>[A-Za-z0-9_-]+)\s*\]\s*(?:#.*)?$")
_KEY_LINE = re.compile(
    r"""^(?P<lead>\s*(?:"(?P<double>[^"\\]*)"|'(?P<single>[^']*)'|(?P<bare>[A-Za-z0-9_-]+))\s*=\s*)"""
    r"""(?P<value>[^\s#]+)(?P<trail>\s*(?:\#.*)?)$""",
    re.DOTALL,
)


def _rewrite(path: Path, floors: Floors, changes: Sequence[FloorChange]) -> None:
    """Replace the values of ``changes`` in ``path`` line by line, so comments and order survive."""
    wanted = {(change.kind, change.metric): change.new for change in changes}
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    kind: Kind | None = None
    for index, line in enumerate(lines):
        body = line.rstrip("\r\n")
        table = _TABLE_LINE.match(body)
        if table:
            kind = _TABLE_KINDS.get(table.group("name"))
            continue
        key = _KEY_LINE.match(body)
        if kind is None or not key:
            continue
        metric = key.group("double") or key.group("single") or key.group("bare")
        if (kind, metric) in wanted:
            new = _format_number(wanted[(kind, metric)])
            lines[index] = key.group("lead") + new + key.group("trail") + line[len(body):]
    text = "".join(lines)
    expected = {k: dict(floors.table(k)) for k in _KIND_TABLES}
    for (kind_, metric), new in wanted.items():
        expected[kind_][metric] = new
    rewritten = parse_floors(text, source=str(path))
    if {"min": dict(rewritten.minimum), "max": dict(rewritten.maximum)} != expected:
        raise RuntimeError(f"could not rewrite {path} line by line (unusual layout); edit the values by hand")
    # Write beside and rename, so an interrupted run never leaves half a floors file.
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as out:
            out.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


# --------------------------------------------------------------------------- history


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-C", str(repo), *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        errors="replace",
        check=False,
    )


def _version_at(repo: Path, commit: str, path: str) -> str | None:
    # "./" makes the path relative to the -C folder, the same as the log's pathspec.
    shown = _git(repo, "show", f"{commit}:./{path}")
    return shown.stdout if shown.returncode == 0 else None


def _loosened(before: Floors, after: Floors | None) -> dict[tuple[Kind, str], str]:
    """Floors of ``before`` that ``after`` lowers or drops, each with a description."""
    loosened = {}
    for metric, kind, old in before.entries():
        new = None if after is None else after.table(kind).get(metric)
        if new is None:
            loosened[(kind, metric)] = f"removed the {kind} floor {metric} (was {_format_number(old)})"
        elif (kind == "min" and new < old) or (kind == "max" and new > old):
            loosened[(kind, metric)] = f"loosened the {kind} floor {metric} {_format_number(old)} -> {_format_number(new)}"
    return loosened


def loosened_without_reason(repo: Path, path: str) -> list[str]:
    """Every loosening of the floors file ``path`` in ``repo``'s git history that lacks its trailer.

    For each commit that changed ``path`` (relative to ``repo``), its version is compared with its
    parent's; a floor lowered or removed needs a ``Floor-lowered: <metric> ...`` line naming that
    metric in the commit message.  A merge only counts floors looser than in every parent (a side
    branch's own commits are checked on their own).  A version that does not parse is reported
    too.  Raises :class:`HistoryUnavailable` when git is missing or ``repo`` is not a git checkout.
    """
    if Path(path).is_absolute():
        raise ValueError(f"path must be relative to the repository, e.g. config/quality_floors.toml, got {path}")
    if shutil.which("git") is None:
        raise HistoryUnavailable("git is not installed")
    repo = Path(repo)
    inside = _git(repo, "rev-parse", "--is-inside-work-tree") if repo.is_dir() else None
    if inside is None or inside.returncode != 0 or inside.stdout.strip() != "true":
        detail = inside.stderr.strip() if inside is not None else "no such folder"
        raise HistoryUnavailable(f"{repo} is not a git checkout ({detail})")
    log = _git(repo, "log", "--full-history", "--format=%H%x1f%P%x1f%B%x1e", "--", path)
    if log.returncode != 0:
        # A fresh repository with no commit yet has no history to check.
        if "does not have any commits" in log.stderr:
            return []
        raise HistoryUnavailable(f"git log failed in {repo}: {log.stderr.strip()}")
    problems = []
    for record in log.stdout.split("\x1e"):
        if not record.strip():
            continue
        commit, parents, message = record.lstrip("\n").split("\x1f", 2)
        subject = message.strip().splitlines()[0] if message.strip() else ""
        where = f"{commit[:10]} ({subject})"
        text = _version_at(repo, commit, path)
        try:
            after = None if text is None else parse_floors(text, source=f"{commit[:10]}:{path}")
        except ValueError as error:
            problems.append(f"{where}: committed a floors file that does not parse: {error}")
            continue
        flagged: dict[tuple[Kind, str], str] | None = None
        for parent in parents.split():
            before_text = _version_at(repo, parent, path)
            try:
                before = Floors() if before_text is None else parse_floors(before_text)
            except ValueError:
                before = Floors()  # reported at the commit that broke it
            loosened = _loosened(before, after)
            flagged = loosened if flagged is None else {k: v for k, v in flagged.items() if k in loosened}
        explained = set(re.findall(rf"^\s*{TRAILER_KEY}:\s*(\S+)", message, flags=re.MULTILINE))
        for (_, metric), description in (flagged or {}).items():
            if metric not in explained:
                problems.append(f"{where}: {description} without a '{TRAILER_KEY}: {metric} ...' line in its message")
    return problems


# --------------------------------------------------------------------------- command line


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m newsdedup.evaluation.floors check|raise|lower ...``; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m newsdedup.evaluation.floors", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    check = commands.add_parser("check", help="check a results.json against the floors (exit 1 on any failure)")
    check.add_argument("results", type=Path)
    check.add_argument("--floors", type=Path, default=None, help="floors file (default: the packaged one)")
    tighten = commands.add_parser("raise", help="tighten floors to the measured figures (never loosens)")
    tighten.add_argument("floors", type=Path)
    tighten.add_argument("--results", type=Path, required=True)
    tighten.add_argument("--headroom", type=float, required=True, help="slack below/above the measured figure")
    lower = commands.add_parser("lower", help="loosen one floor; needs --reason and prints the commit trailer")
    lower.add_argument("floors", type=Path)
    lower.add_argument("metric")
    lower.add_argument("value", type=float)
    lower.add_argument("--reason", required=True)
    lower.add_argument("--kind", choices=sorted(_KIND_TABLES), default=None)
    args = parser.parse_args(argv)
    try:
        if args.command == "check":
            checks = check_floors(_read_results(args.results), load_floors(args.floors))
            print(format_check(checks))
            return 0 if all(c.passed for c in checks) else 1
        if args.command == "raise":
            changes = raise_floors(_read_results(args.results), args.floors, headroom=args.headroom)
            for change in changes:
                print(f"{change.metric} ({change.kind}) {_format_number(change.old)} -> {_format_number(change.new)}")
            print(f"{len(changes)} floors raised in {args.floors}")
            return 0
        value = int(args.value) if args.value.is_integer() else args.value
        lower_floor(args.floors, args.metric, value, reason=args.reason, kind=args.kind)
        return 0
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


def _read_results(path: Path) -> Mapping:
    if not Path(path).is_file():
        raise ValueError(f"results file {path} does not exist; run `newsdedup eval --out DIR` first")
    return json.loads(Path(path).read_text(encoding="utf-8"))


if __name__ == "__main__":
    sys.exit(main())
