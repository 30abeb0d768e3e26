"""The relations a reader sees, on the hand-labelled real pairs: near duplicate, reuse or nothing (issue 34).

Each pair is decided as the product decides it, both stages together:

* the near-duplicate stage (the product's default setting, :class:`~newsdedup.evaluation.real_pair_scores.PairJudge`:
  the exact stage, then Single-Pass, ``b`` after ``a``) says whether ``b`` joins ``a``'s story;
* if not, the passage-reuse stage (:class:`~newsdedup.dedup.reuse.ReuseIndex`, the shipped setting) says whether
  ``b`` shares passages with ``a``. As in a crawl, its index holds every text of the shared data (so text that
  many stories share is discounted), each with its site (the Sina channel pages are one site, ``sina``; a
  finance portal's pages one site each; Sogou's files one each) and its headline
  (:func:`~newsdedup.evaluation.near_veto.load_headlines`), so a site's shared passages are boilerplate as in a
  crawl.

A pair is *linked* when either stage relates it. The figures (the issue's acceptance):

* near duplicate: precision, recall and F1 with ``near_duplicate`` pairs as positives (``reuse`` and ``different``
  pairs called near duplicates are false positives);
* reuse linked: the share of ``reuse`` pairs linked, as reuse or in one story;
* different linked: the share of ``different`` pairs linked (a false relation either way).

``junk`` pairs are left out. Halves: ``tune`` (where rules are chosen), ``test`` without the *disputed* pairs
(those whose second, blind reading in ``real-pairs-second-reader/second_reader.jsonl`` differs from the first:
neither reading is taken), ``test_with_disputed`` (the first reading's labels), and the disputed pairs themselves
with both readings and the call. ``python -m newsdedup.evaluation.relations DATA_DIR`` prints them (~15 s of
CPU); ``newsdedup eval --stages pairs`` writes them under ``relations``, and the quality floors hold the test
half's figures.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from newsdedup.dedup.reuse import ReuseIndex
from newsdedup.dedup.single_pass import NearSettings
from newsdedup.evaluation import scoring
from newsdedup.evaluation.near_veto import headline_of, load_headlines
from newsdedup.evaluation.real_pair_scores import PairJudge
from newsdedup.evaluation.real_pairs import load_labels, load_texts

SECOND_READER = Path("real-pairs-second-reader") / "second_reader.jsonl"


def second_reading(data_dir: Path | str) -> dict[tuple[str, str], str]:
    """Pair -> the second reader's label (empty when the file is not in ``data_dir``)."""
    path = Path(data_dir) / SECOND_READER
    if not path.is_file():
        return {}
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return {(row["a"], row["b"]): row["label"] for row in rows}


def site_of(text_id: str) -> str | None:
    """The site a text was published on, as a crawl would name it (None when the source does not say)."""
    folder, locator = text_id.split(":", 1)
    if folder == "sina-news-2018":
        return "sina"
    if folder == "xmu-finance-news":
        return locator.removeprefix("gold/").split("_", 1)[0]
    if folder == "sogou-smarty":
        return locator.split("#", 1)[0]
    return None


def decide(data_dir: Path | str, labels: Sequence[Mapping], texts: Mapping[str, str], *,
           near: NearSettings | None = None) -> dict[tuple[str, str], str]:
    """Pair -> ``near`` (``b`` joins ``a``'s story), ``reuse`` (``b`` shares passages with ``a``) or ``none``."""
    near = near if near is not None else NearSettings()
    headlines = load_headlines(data_dir)
    judge = PairJudge()
    index = ReuseIndex()
    for key in sorted(texts):
        index.add(key, texts[key], group=site_of(key), title=headline_of(key, headlines))
    calls = {}
    for row in labels:
        a, b = row["a"], row["b"]
        if judge.is_near_duplicate(near, texts[a], texts[b]):
            calls[a, b] = "near"
            continue
        found = index.find(texts[b], exclude=(b,), group=site_of(b), title=headline_of(b, headlines))
        calls[a, b] = "reuse" if any(reuse.source == a for reuse in found) else "none"
    return calls


def score(labels: Sequence[Mapping], calls: Mapping[tuple[str, str], str], keep: Callable[[Mapping], bool]) -> dict:
    """The figures over the labelled pairs ``keep`` selects (junk left out)."""
    c = dict.fromkeys(("tp", "fp", "fn", "reuse", "reuse_linked", "reuse_merged", "different", "different_linked"), 0)
    for row in labels:
        if row["label"] == "junk" or not keep(row):
            continue
        call = calls[row["a"], row["b"]]
        if row["label"] == "near_duplicate":
            c["tp" if call == "near" else "fn"] += 1
            continue
        c["fp"] += call == "near"
        kind = row["label"]
        c[kind] += 1
        c[f"{kind}_linked"] += call != "none"
        if kind == "reuse":
            c["reuse_merged"] += call == "near"
    precision = scoring.precision(c["tp"], c["tp"] + c["fp"])
    recall = scoring.recall(c["tp"], c["tp"] + c["fn"])
    return {"near_precision": round(precision, 4), "near_recall": round(recall, 4),
            "near_f1": round(scoring.f1(precision, recall), 4),
            "reuse_linked_recall": round(scoring.recall(c["reuse_linked"], c["reuse"]), 4),
            "different_linked_rate": round(c["different_linked"] / c["different"], 4) if c["different"] else 0.0,
            **c}


def stage_results(data_dir: Path | str, *, labels: Sequence[Mapping] | None = None,
                  texts: Mapping[str, str] | None = None) -> dict:
    """JSON-ready: the figures of each half (see the module), and the disputed pairs with their calls."""
    labels = list(labels if labels is not None else load_labels())
    texts = texts if texts is not None else load_texts(data_dir)
    second = second_reading(data_dir)
    disputed = {pair for pair, label in second.items() if pair in {(r["a"], r["b"]): 0 for r in labels}
                and label != next(r["label"] for r in labels if (r["a"], r["b"]) == pair)}
    calls = decide(data_dir, labels, texts)

    def pair(row: Mapping) -> tuple[str, str]:
        return row["a"], row["b"]

    return {
        "second_reader": bool(second),
        "tune": score(labels, calls, lambda row: row["split"] == "tune" and pair(row) not in disputed),
        "test": score(labels, calls, lambda row: row["split"] == "test" and pair(row) not in disputed),
        "test_with_disputed": score(labels, calls, lambda row: row["split"] == "test"),
        "disputed": [{"a": row["a"], "b": row["b"], "split": row["split"], "first": row["label"],
                      "second": second[pair(row)], "call": calls[pair(row)]}
                     for row in labels if pair(row) in disputed],
    }


def lines(results: Mapping) -> list[str]:
    """Plain lines: each half's figures, then the disputed pairs."""
    out = []
    for half in ("tune", "test", "test_with_disputed"):
        s = results[half]
        out.append(f"relations {half}: near P {s['near_precision']:.3f} R {s['near_recall']:.3f} F1 {s['near_f1']:.3f}"
                   f" ({s['reuse_merged']} reuse pairs merged); reuse linked {s['reuse_linked']}/{s['reuse']} "
                   f"({s['reuse_linked_recall']:.3f}); different linked {s['different_linked']}/{s['different']} "
                   f"({s['different_linked_rate']:.3f})")
    for row in results["disputed"]:
        out.append(f"  disputed ({row['split']}): first {row['first']}, second {row['second']}, called {row['call']}: "
                   f"{row['a']} / {row['b']}")
    return out


def markdown(results: Mapping) -> list[str]:
    """The report's section."""
    rows = ["| half | near P | near R | near F1 | reuse merged | reuse linked | different linked |",
            "|---|---|---|---|---|---|---|"]
    for half in ("tune", "test", "test_with_disputed"):
        s = results[half]
        rows.append(f"| {half} | {s['near_precision']:.3f} | {s['near_recall']:.3f} | {s['near_f1']:.3f} | "
                    f"{s['reuse_merged']}/{s['reuse']} | {s['reuse_linked']}/{s['reuse']} | "
                    f"{s['different_linked']}/{s['different']} |")
    disputed = [f"- {row['split']}: first {row['first']}, second {row['second']}, called {row['call']}"
                for row in results["disputed"]]
    return ["### Relations on the real labelled pairs (near duplicate, reuse or none)", "",
            "Both stages as a crawl runs them (`newsdedup.evaluation.relations`); `test` leaves out the pairs the "
            "two readings dispute" + ("" if results["second_reader"] else " (no second reading found: none left out)")
            + ".", "", *rows, "", *(["Disputed pairs:", "", *disputed, ""] if disputed else [])]


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m newsdedup.evaluation.relations DATA_DIR", file=sys.stderr)
        return 2
    try:
        results = stage_results(args[0])
    except ValueError as error:
        print(f"newsdedup: error: {error}", file=sys.stderr)
        return 2
    print("\n".join(lines(results)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
