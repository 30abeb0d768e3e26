"""Simhash on real Sina news texts: why stopwords and IDF weights matter.

The test uses a fixed sample of 300 articles and the 200 hand-labelled pairs. For the whole corpus run

    python tests/test_simhash_data.py

which prints, per feature weighting, the Hamming distances between unrelated articles (every pair of usable
texts from different categories), how many of them fall within 3 bits and whether those are real copies,
the largest SimhashIndex bucket, and the labelled pairs found within 3 bits.
"""

from __future__ import annotations

import collections
import gzip
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from newsdedup.dedup.simhash import default_idf, hamming, simhash, word_features
from newsdedup.text.normalize import normalize_text
from newsdedup.text.segment import get_segmenter
from newsdedup.text.stopwords import load_stopwords

pytestmark = pytest.mark.shared_data

# TechNews and testTech hold copies of the same articles (two scrapers): the same topic group.
CATEGORY_GROUP = {"TechNews": "tech", "testTech": "tech"}
MIN_USABLE_CHARS = 200  # shorter texts are empty pages, title-only pages or junk
NEAR_COPY_J5 = 0.5  # character 5-gram Jaccard from which two texts are copies (labelled DUPs are >= 0.745)


def read_articles(shared_data: Path) -> list[dict[str, str]]:
    with gzip.open(shared_data / "sina-news-2018" / "articles.jsonl.gz", "rt", encoding="utf-8") as lines:
        return [json.loads(line) for line in lines]


def read_labelled_pairs(shared_data: Path) -> list[dict[str, object]]:
    with open(shared_data / "sina-news-2018" / "pairs.labelled.jsonl", encoding="utf-8") as lines:
        return [json.loads(line) for line in lines]


def is_usable(text: str) -> bool:
    return len(normalize_text(text)) >= MIN_USABLE_CHARS and "\ufffd" not in text


def weightings() -> dict[str, Callable[[list[str]], dict[str, float]]]:
    stopwords = load_stopwords()
    table, median = default_idf()
    return {
        "TF, all words": lambda tokens: word_features(tokens, frozenset()),
        "TF, stopwords removed": lambda tokens: word_features(tokens, stopwords),
        "TF-IDF, all words": lambda tokens: word_features(tokens, frozenset(), idf=table, default_idf=median),
        "TF-IDF, stopwords removed": lambda tokens: word_features(tokens, stopwords, idf=table, default_idf=median),
    }


def fingerprints(texts: dict[str, str], weighting: Callable[[list[str]], dict[str, float]]) -> dict[str, int]:
    segmenter = get_segmenter()
    return {key: simhash(weighting(segmenter.cut(normalize_text(text)))) for key, text in texts.items()}


def cross_category_distances(articles: list[dict[str, str]], prints: dict[str, int]) -> list[int]:
    groups = [(CATEGORY_GROUP.get(a["category"], a["category"]), prints[a["id"]]) for a in articles]
    return [
        hamming(fp_a, fp_b)
        for i, (group_a, fp_a) in enumerate(groups)
        for group_b, fp_b in groups[i + 1 :]
        if group_a != group_b
    ]


@pytest.fixture(scope="module")
def sina(shared_data: Path) -> tuple[list[dict[str, str]], list[dict[str, object]]]:
    return read_articles(shared_data), read_labelled_pairs(shared_data)


def test_idf_and_stopwords_spread_unrelated_articles(sina: tuple[list[dict[str, str]], list]) -> None:
    articles, _ = sina
    sample = [a for a in articles[:: len(articles) // 360] if is_usable(a["text"])][:300]
    texts = {a["id"]: a["text"] for a in sample}
    schemes = weightings()
    plain = cross_category_distances(sample, fingerprints(texts, schemes["TF, all words"]))
    weighted = cross_category_distances(sample, fingerprints(texts, schemes["TF-IDF, stopwords removed"]))
    assert len(plain) > 20_000
    # Unrelated 64-bit fingerprints should sit near 32 bits apart; plain term frequency pulls them together.
    assert statistics.fmean(weighted) > 29
    assert statistics.fmean(plain) < statistics.fmean(weighted) - 5
    assert sum(d <= 3 for d in weighted) <= sum(d <= 3 for d in plain)


def test_labelled_pairs_within_three_bits(sina: tuple[list[dict[str, str]], list]) -> None:
    articles, pairs = sina
    by_id = {a["id"]: a["text"] for a in articles}
    texts = {key: by_id[key] for pair in pairs for key in (pair["a"], pair["b"])}
    prints = fingerprints(texts, weightings()["TF-IDF, stopwords removed"])
    within = collections.Counter()
    total = collections.Counter()
    for pair in pairs:
        total[pair["label"]] += 1
        within[pair["label"]] += hamming(prints[pair["a"]], prints[pair["b"]]) <= 3
    assert within["DIFF"] == 0 and within["REWRITE"] == 0  # no different article merged
    # Most copies are found; the misses differ by Sina's ad-loader script, which extraction must remove.
    assert within["DUP"] >= 15 and total["DUP"] == 22


def char_5gram_jaccard(a: str, b: str) -> float:
    a, b = "".join(a.split()), "".join(b.split())
    grams_a = {a[i : i + 5] for i in range(len(a) - 4)}
    grams_b = {b[i : i + 5] for i in range(len(b) - 4)}
    return len(grams_a & grams_b) / max(1, len(grams_a | grams_b))


def main(shared_data: Path) -> None:
    articles = read_articles(shared_data)
    pairs = read_labelled_pairs(shared_data)
    usable = [a for a in articles if is_usable(a["text"])]
    texts = {a["id"]: a["text"] for a in articles}
    print(f"{len(articles)} articles, {len(usable)} usable (>= {MIN_USABLE_CHARS} chars, no U+FFFD)")
    index_masks = [0xFFFF << shift for shift in (0, 16, 32, 48)]  # SimhashIndex(64, 3): four 16-bit blocks
    for name, weighting in weightings().items():
        started = time.process_time()
        prints = fingerprints(texts, weighting)
        seconds = time.process_time() - started
        groups = [(CATEGORY_GROUP.get(a["category"], a["category"]), prints[a["id"]], a["id"]) for a in usable]
        count = total = 0
        close: list[tuple[int, str, str]] = []
        for i, (group_a, fp_a, id_a) in enumerate(groups):
            for group_b, fp_b, id_b in groups[i + 1 :]:
                if group_a != group_b:
                    distance = (fp_a ^ fp_b).bit_count()
                    count += 1
                    total += distance
                    if distance <= 3:
                        close.append((distance, id_a, id_b))
        copies = sum(char_5gram_jaccard(texts[a], texts[b]) >= NEAR_COPY_J5 for _, a, b in close)
        non_copy_min = min(
            (d for d, a, b in close if char_5gram_jaccard(texts[a], texts[b]) < NEAR_COPY_J5), default=">3"
        )
        distinct = {prints[a["id"]] for a in usable}
        largest_bucket = max(
            collections.Counter(fp & mask for fp in distinct).most_common(1)[0][1] for mask in index_masks
        )
        labelled = collections.Counter()
        for pair in pairs:
            if hamming(prints[pair["a"]], prints[pair["b"]]) <= 3:
                labelled[pair["label"]] += 1
        print(
            f"{name}: {seconds / len(texts) * 1000:.2f} ms/text (segment + features + simhash);"
            f" {count:,} cross-category pairs: mean distance {total / count:.2f} bits,"
            f" {len(close)} within 3 bits ({len(close) / count:.5%}), of which {copies} are copies"
            f" (J5 >= {NEAR_COPY_J5}), closest non-copy pair {non_copy_min} bits;"
            f" largest index bucket {largest_bucket} of {len(distinct)} distinct fingerprints;"
            f" labelled pairs within 3 bits: {dict(labelled)}",
            flush=True,
        )


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from conftest import SHARED_DATA

    main(SHARED_DATA)
