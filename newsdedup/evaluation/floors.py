"""Quality floors: the worst figures ``newsdedup eval`` may measure before CI fails.

The floors live in a TOML file (the packaged default is ``config/quality_floors.toml``) with a ``[minimum]``
table (measured >= floor) and a ``[maximum]`` table (measured <= floor); keys are quoted dotted paths into the
eval's ``results.json``.  Floors move one way easily and the other way only on purpose: :func:`raise_floors`
(``newsdedup eval --raise-floors``) only tightens; :func:`lower_floor` (``newsdedup eval --lower-floor``) needs a
reason and prints the commit trailer ``Floor-lowered: <metric> <old> -> <new>: <reason>``;
:func:`floor_lowered_trailer`'s line is what ``tests/test_quality_floors.py`` looks for in the git history.

>>> floors = parse_floors('[minimum]\\n"a.f1" = 0.9\\n[maximum]\\n"a.leaks" = 2\\n')
>>> [(c.metric, c.kind, c.passed) for c in check_floors({"a": {"f1": 0.95, "leaks": 3}}, floors)]
[('a.f1', 'min', True), ('a.leaks', 'max', False)]
"""

from __future__ import annotations

import importlib.resources
import math
import os
import re
import tempfile
import tomllib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from pathlib import Path

TRAILER_KEY = "Floor-lowered"
_TABLES = {"minimum": "min", "maximum": "max"}
Number = int | float


@dataclass(frozen=True)
class Floors:
    minimum: Mapping[str, Number] = field(default_factory=dict)
    maximum: Mapping[str, Number] = field(default_factory=dict)
    source: str = "<text>"

    def table(self, kind: str) -> Mapping[str, Number]:
        return self.minimum if kind == "min" else self.maximum

    def entries(self) -> Iterator[tuple[str, str, Number]]:
        """``(metric, kind, value)``, minimums first, in file order."""
        for kind in ("min", "max"):
            yield from ((metric, kind, value) for metric, value in self.table(kind).items())

    def __len__(self) -> int:
        return len(self.minimum) + len(self.maximum)


@dataclass(frozen=True)
class FloorResult:
    metric: str
    kind: str
    floor: Number
    measured: Number | None  # None: the results lack the metric
    passed: bool

    @property
    def verdict(self) -> str:
        if self.measured is None:
            return "FAIL: not measured"
        return "ok" if self.passed else f"FAIL: {'below minimum' if self.kind == 'min' else 'above maximum'}"


@dataclass(frozen=True)
class FloorChange:
    metric: str
    kind: str
    old: Number
    new: Number
    reason: str | None = None  # set when lowered

    @property
    def trailer(self) -> str:
        return floor_lowered_trailer(self.metric, self.old, self.new, self.reason or "")


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)  # `true` is a typo, not a floor


def _number(value: Number) -> str:
    return str(value) if isinstance(value, int) else repr(float(value))


def parse_floors(text: str, source: str = "<text>") -> Floors:
    """Floors from the text of a floors file; ``source`` names it in error messages."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ValueError(f"{source}: not valid TOML ({error}); fix the syntax") from error
    if unknown := sorted(set(document) - set(_TABLES)):
        raise ValueError(f"{source}: unknown top-level keys {unknown}; put floors under [minimum] or [maximum]")
    tables = {name: document.get(name, {}) for name in _TABLES}
    for name, table in tables.items():
        for metric, value in table.items():
            if isinstance(value, dict):
                raise ValueError(f'{source}: [{name}] {metric} is a nested table; quote the dotted metric path, '
                                 f'e.g. "{metric}.f1" = 0.9')
            if not _is_number(value) or not math.isfinite(value):
                raise ValueError(f"{source}: [{name}] {metric!r} = {value!r}; a floor must be a finite number")
    for metric in tables["minimum"].keys() & tables["maximum"].keys():
        if tables["minimum"][metric] > tables["maximum"][metric]:
            raise ValueError(f"{source}: {metric!r} has its minimum above its maximum; no figure could pass, fix one")
    return Floors(tables["minimum"], tables["maximum"], source)


def default_floors_path() -> Path:
    """The packaged floors file (``config/quality_floors.toml`` in a checkout or an editable install)."""
    return Path(str(importlib.resources.files("newsdedup.config").joinpath("quality_floors.toml")))


def load_floors(path: Path | None = None) -> Floors:
    path = Path(path) if path is not None else default_floors_path()
    if not path.is_file():
        raise ValueError(f"floors file {path} does not exist; pass an existing file, or none for the packaged default")
    return parse_floors(path.read_text(encoding="utf-8"), source=str(path))


def measured_value(results: Mapping, metric: str) -> Number | None:
    """The number at dotted path ``metric`` in ``results``, or None."""
    node: object = results
    for key in metric.split("."):
        if not isinstance(node, Mapping) or key not in node:
            return None
        node = node[key]
    return node if _is_number(node) else None  # type: ignore[return-value]


def check_floors(results: Mapping, floors: Floors) -> list[FloorResult]:
    """Every floor checked against the parsed results.json; a missing metric or NaN fails."""
    checks = []
    for metric, kind, floor in floors.entries():
        measured = measured_value(results, metric)
        passed = measured is not None and (measured >= floor if kind == "min" else measured <= floor)
        checks.append(FloorResult(metric, kind, floor, measured, passed))
    return checks


def format_check(checks: Sequence[FloorResult]) -> str:
    """A plain-text table of :func:`check_floors` results with a summary line."""
    rows = [("metric", "kind", "floor", "measured", "result")] + [
        (c.metric, c.kind, _number(c.floor),
         "-" if c.measured is None else str(c.measured) if isinstance(c.measured, int) else f"{c.measured:.4f}",
         c.verdict) for c in checks]
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    failed = sum(not c.passed for c in checks)
    return "\n".join(["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
                     + [f"{len(checks)} floors: {len(checks) - failed} passed, {failed} failed"])


def floor_lowered_trailer(metric: str, old: Number, new: Number, reason: str) -> str:
    return f"{TRAILER_KEY}: {metric} {_number(old)} -> {_number(new)}: {reason}"


def raise_floors(results: Mapping, path: Path, *, headroom: float) -> list[FloorChange]:
    """Tighten the floors in ``path`` to the measured figures less ``headroom``; never loosens.

    A minimum moves up to ``measured - headroom`` rounded down to 3 decimals (a maximum down to ``measured +
    headroom`` rounded up), only when tighter than now; whole-number floors of whole figures stay whole.
    """
    if not _is_number(headroom) or not math.isfinite(headroom) or headroom < 0:
        raise ValueError(f"headroom must be a finite number >= 0 (e.g. 0.005), got {headroom!r}")
    changes = []
    for metric, kind, old in load_floors(path).entries():
        measured = measured_value(results, metric)
        if measured is None or not math.isfinite(measured):
            continue
        # Decimal from repr: 0.936 - 0.006 in binary floats lands a hair under 0.93 and would cost a thousandth.
        target = Decimal(repr(measured)) + (-1 if kind == "min" else 1) * Decimal(repr(headroom))
        whole = isinstance(old, int) and float(measured).is_integer()
        new = target.quantize(Decimal(1) if whole else Decimal("0.001"),
                              rounding=ROUND_FLOOR if kind == "min" else ROUND_CEILING)
        new = int(new) if whole else float(new)
        if (new > old) if kind == "min" else (new < old):
            changes.append(FloorChange(metric, kind, old, new))
    _rewrite(Path(path), changes)
    return changes


def lower_floor(path: Path, metric: str, value: Number, *, reason: str, kind: str | None = None) -> FloorChange:
    """Loosen one floor in ``path`` to ``value`` and print the commit trailer the committer must use."""
    if not isinstance(reason, str) or not reason.strip() or "\n" in reason or "\r" in reason:
        raise ValueError("lowering a floor needs a reason, one line (it becomes the commit trailer)")
    if not _is_number(value) or not math.isfinite(value):
        raise ValueError(f"value must be a finite number, got {value!r}")
    floors = load_floors(path)
    kinds = [k for k in ("min", "max") if metric in floors.table(k) and kind in (None, k)]
    if len(kinds) != 1:
        raise ValueError(f"{path} has {'both a minimum and a maximum' if kinds else 'no floor'} for {metric!r} "
                         f"(pass kind='min' or 'max'); floors there: {sorted(m for m, _, _ in floors.entries())}")
    old = floors.table(kinds[0])[metric]
    if (value >= old) if kinds[0] == "min" else (value <= old):
        raise ValueError(f"{metric} {_number(old)} -> {_number(value)} does not lower the floor; to tighten use "
                         "--raise-floors or edit the file")
    change = FloorChange(metric, kinds[0], old, value, reason.strip())
    _rewrite(Path(path), [change])
    print(f"Lowered {metric} ({kinds[0]}) in {path}. The commit must carry this line in its message:\n{change.trailer}")
    return change


def _rewrite(path: Path, changes: Sequence[FloorChange]) -> None:
    """Replace the changed values line by line (comments and order survive), then swap the file in at once."""
    if not changes:
        return
    wanted = {(c.kind, c.metric): _number(c.new) for c in changes}
    lines, kind = path.read_text(encoding="utf-8").splitlines(keepends=True), None
    for i, line in enumerate(lines):
        if table := re.match(r"\s*\[\s*(\w+)\s*\]", line):
            kind = _TABLES.get(table.group(1))
        elif key := re.match(r"""(\s*(["']?)([^"'=]+?)\2\s*=\s*)([^\s#]+)""", line):
            if (kind, key.group(3)) in wanted:
                lines[i] = key.group(1) + wanted[(kind, key.group(3))] + line[key.end():]
    text = "".join(lines)
    rewritten = parse_floors(text, str(path))
    if any(rewritten.table(c.kind).get(c.metric) != c.new for c in changes):
        raise RuntimeError(f"could not rewrite {path} line by line (unusual layout); edit the values by hand")
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    with os.fdopen(handle, "w", encoding="utf-8", newline="") as out:
        out.write(text)
    os.replace(temporary, path)
