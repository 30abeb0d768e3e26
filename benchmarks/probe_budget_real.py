"""The SpotSigs probe budget on real texts: the pairs a budgeted search finds against the lossless search's.

    python benchmarks/probe_budget_real.py ../shared/data --budgets 500 2000 20000
    python benchmarks/probe_budget_real.py ../shared/data --corpus page-benchmark --budgets 2000 20000

Every Sina 2018 text (``sina-news-2018/articles.jsonl.gz``, 9,054 articles, with their reprints and rewrites), or
every text of the page-level benchmark (``newsdedup eval``'s 1,640 documents: real texts and their reprints), is
stored in a :class:`PersistentSpotSigsIndex`, and each text is then searched (Jaccard, and containment at the
product's thresholds) once without a budget (the lossless prefix bound: every pair of the method) and once per
budget. Reported per budget: the pairs the lossless search finds (a text's pair with itself left out), how many
the budgeted one finds, their recall, and whether every budgeted hit had the lossless hit's score.

A 9,054-text store has short posting lists, so a product-size budget rarely binds on it; the budgets that bind
here stand for the larger ones of a large store. The synthetic 10,000,000-story check (``dedup_state_scale.py
measure --recall-sample``) measures the budget at scale against brute force.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from newsdedup.dedup.features import FeatureConfig, FeatureExtractor
from newsdedup.dedup.single_pass import NearSettings, SpotSigsMatcher
from newsdedup.dedup.spotsigs_disk import PersistentSpotSigsIndex

DEFAULTS = NearSettings()


def texts(data: Path, corpus: str) -> list[str]:
    if corpus == "page-benchmark":
        from newsdedup.evaluation.page_level import DEFAULT_DOCS, benchmark_sizes
        from newsdedup.evaluation.reprints import build_text_benchmark
        return [doc["text"] for doc in build_text_benchmark(data, seed=1, **benchmark_sizes(DEFAULT_DOCS))]
    with gzip.open(data / "sina-news-2018" / "articles.jsonl.gz", "rt", encoding="utf-8") as lines:
        return [json.loads(line)["text"] for line in lines]


def searches(index: PersistentSpotSigsIndex, spots) -> tuple[dict[int, float], dict[int, float]]:
    return dict(index.query(spots)), dict(index.contained(
        spots, min_containment=DEFAULTS.spotsigs_min_containment, min_spots=DEFAULTS.spotsigs_containment_min_spots,
        min_ratio=SpotSigsMatcher.CONTAINMENT_MIN_RATIO))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data", type=Path, help="the shared data folder (holds sina-news-2018/)")
    parser.add_argument("--budgets", type=int, nargs="+", default=[500, 2000, 20000])
    parser.add_argument("--corpus", choices=["sina", "page-benchmark"], default="sina")
    args = parser.parse_args()
    if not (args.data / "sina-news-2018").is_dir():
        sys.exit(f"{args.data / 'sina-news-2018'} not found: this benchmark needs the real texts")
    extractor = FeatureExtractor(FeatureConfig(method="spotsigs"))
    started = time.perf_counter()
    docs = [dict(extractor.features(text).spots or {}) for text in texts(args.data, args.corpus)]
    print(f"{len(docs)} texts, spots in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    with tempfile.TemporaryDirectory() as folder:
        index = PersistentSpotSigsIndex(folder, tau=DEFAULTS.spotsigs_tau,
                                        min_signatures=DEFAULTS.spotsigs_min_signatures,
                                        min_containment=DEFAULTS.spotsigs_min_containment)
        kept = [key for key, doc in enumerate(docs) if sum(doc.values()) >= DEFAULTS.spotsigs_min_signatures]
        index.bulk_add((key, docs[key], 1_780_000_000) for key in kept)
        truth = {key: searches(index, docs[key]) for key in kept}
        for budget in args.budgets:
            index.probe_budget = budget
            expected = found = same_score = 0
            for key in kept:
                for hits, lossless in zip(searches(index, docs[key]), truth[key]):
                    pairs = lossless.keys() - {key}
                    expected += len(pairs)
                    found += len(pairs & hits.keys())
                    same_score += all(lossless.get(other) == score for other, score in hits.items())
            print(json.dumps({"budget": budget, "texts": len(kept), "pairs_lossless": expected, "pairs_found": found,
                              "recall": round(found / expected, 4) if expected else None,
                              "every_hit_exact": same_score == 2 * len(kept),
                              "postings_in_index": int(np.sum([len(s.prefix_docs) for s in index.segments]))}),
                  flush=True)
        index.close()


if __name__ == "__main__":
    main()
