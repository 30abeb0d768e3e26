"""Asserts the figures a user sees from the demo portal (stdlib only: it runs with any Python).

    python3 .ci/check_summary.py demo FILE    # `newsdedup demo`'s output
    python3 .ci/check_summary.py crawl FILE   # `newsdedup crawl` of the demo portal, day 1 (its closing summary)

The figures are the demo portal's, as the README shows them; a change to the demo changes them here too, on
purpose. Sites are crawled side by side, so which copy of a story comes first (stored, or an exact repeat of the
other site's) varies between runs: per site, the figures that do not depend on it are compared, and the split
into stored, new, near and repeats is compared summed over the sites.
"""

from __future__ import annotations

import re
import sys

# site -> list pages, article links, known, fetched, stored, new, near, repeats, skipped, failed (day 1, empty store)
DAY_ONE = {
    "dongfang": (3, 6, 0, 6, 4, 3, 1, 1, 1, 0),
    "nanling": (1, 5, 0, 5, 5, 4, 1, 0, 0, 0),
    "xinghe": (3, 7, 0, 6, 4, 3, 1, 1, 1, 1),
    "qinghe": (3, 7, 0, 6, 3, 3, 0, 2, 1, 0),
}
DEMO_TOTALS = ("18 articles (14 stories, 4 near-duplicate reprints), 5 exact repeats recorded, "
               "3 pages skipped, 1 failed")


def summary_tables(text: str) -> list[dict[str, tuple[int, ...]]]:
    """Every closing summary's table in ``text``: site -> its ten figures."""
    tables = []
    for block in re.split(r"^\s*site\s+list pages\s+article links.*$", text, flags=re.M)[1:]:
        rows = {}
        for line in block.splitlines()[1:] if block.startswith("\n") else block.splitlines():
            match = re.match(r"^\s*([a-z0-9_-]+)((?:\s+\d+){10})\s*$", line)
            if match:
                rows[match.group(1)] = tuple(int(n) for n in match.group(2).split())
            elif line.strip() and not line.startswith(" " * 6) and rows:
                break
        tables.append(rows)
    return tables


def comparable(table: dict[str, tuple[int, ...]]) -> dict[str, tuple[int, ...]]:
    """Per site: list pages, links, known, fetched, stored + repeats, skipped, failed; and the column sums."""
    rows = {site: (f[0], f[1], f[2], f[3], f[4] + f[7], f[8], f[9]) for site, f in table.items()}
    rows["(all sites)"] = tuple(sum(column) for column in zip(*table.values()))
    return rows


def main(kind: str, path: str) -> int:
    text = open(path, encoding="utf-8").read()
    failures = []
    tables = summary_tables(text)
    if kind == "demo":
        if text.count("newsdedup run finished: exit status 0 (ok)") != 2:
            failures.append("two runs finishing with exit status 0 (ok)")
        if not tables or comparable(tables[0]) != comparable(DAY_ONE):
            failures.append(f"day 1's table {DAY_ONE}, got {tables[:1]}")
        if DEMO_TOTALS not in text:
            failures.append(f"the totals line {DEMO_TOTALS!r}")
    elif kind == "crawl":
        if "newsdedup run finished: exit status 0 (ok)" not in text:
            failures.append("newsdedup run finished: exit status 0 (ok)")
        if len(tables) != 1 or comparable(tables[0]) != comparable(DAY_ONE):
            failures.append(f"one table equal to {DAY_ONE}, got {tables}")
    else:
        raise SystemExit(f"unknown kind {kind!r}")
    for failure in failures:
        print(f"check_summary {kind}: expected {failure}", file=sys.stderr)
    if not failures:
        print(f"check_summary {kind}: the figures are the demo portal's")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
