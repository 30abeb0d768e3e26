"""The Markdown of the evaluation's reports: a figure's cell and a table."""

from __future__ import annotations

from collections.abc import Sequence


def cell(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def table(header: Sequence[str], body: Sequence[Sequence[str]]) -> list[str]:
    """A Markdown table."""
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header), *("| " + " | ".join(r) + " |" for r in body)]
