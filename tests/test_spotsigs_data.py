"""SpotSigs on real Sina news texts (../shared/data/sina-news-2018): reprints score high, other articles low."""

from __future__ import annotations

import gzip
import json
import random
import re
import statistics
from collections import Counter
from pathlib import Path

import pytest

from newsdedup.dedup.spotsigs import is_word, load_antecedents, multiset_jaccard, spot_signatures
from newsdedup.dedup.spotsigs_index import SpotSigsIndex
from newsdedup.text.hashing import hash64
from newsdedup.text.normalize import normalize_text
from newsdedup.text.segment import get_segmenter

pytestmark = pytest.mark.shared_data

_SENTENCE_END = re.compile(r"(?<=[。！？!?])")


@pytest.fixture(scope="module")
def sina(shared_data: Path) -> dict[str, dict]:
    path = shared_data / "sina-news-2018" / "articles.jsonl.gz"
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return {article["id"]: article for article in map(json.loads, handle)}


@pytest.fixture(scope="module")
def spots():
    """Text -> spot multiset the way the pipeline computes it (normalise, segment, optimized antecedents)."""
    cut = get_segmenter().cut
    antecedents = load_antecedents("optimized")

    def compute(text: str) -> Counter:
        return spot_signatures([t for t in cut(normalize_text(text)) if is_word(t)], antecedents)

    return compute


def reprint(text: str, share: float, rng: random.Random, donor: str) -> str:
    """A reprint: about ``share`` of the text's characters deleted, replaced or inserted sentence-wise, plus a source line."""
    sentences = [s for s in _SENTENCE_END.split(text) if s]
    donor_sentences = [s for s in _SENTENCE_END.split(donor) if s]
    changed = 0
    while changed < share * len(text) and sentences:
        i = rng.randrange(len(sentences))
        operation = rng.choice(("delete", "replace", "insert"))
        if operation == "delete":
            changed += len(sentences.pop(i))
        elif operation == "replace":
            changed += len(sentences[i])
            sentences[i] = rng.choice(donor_sentences)
        else:
            sentences.insert(i, rng.choice(donor_sentences))
            changed += len(sentences[i])
    return "来源：新华网 " + "".join(sentences)


def test_reprints_with_10_percent_edits_score_high(sina: dict[str, dict], spots) -> None:
    rng = random.Random(2018)
    articles = [a["text"] for a in sina.values() if len(a["text"]) >= 400]
    scores = []
    for text in rng.sample(articles, 200):
        original = spots(text)
        if sum(original.values()) < 30:
            continue  # junk (scripts, widgets): nothing to judge
        scores.append(multiset_jaccard(original, spots(reprint(text, 0.10, rng, rng.choice(articles)))))
    scores.sort()
    assert len(scores) > 120
    # Measured: median 0.85, 5th percentile 0.66, minimum 0.50 (the paper: all true pairs found at tau 0.35-0.5).
    assert statistics.median(scores) > 0.75, scores
    assert scores[len(scores) // 20] > 0.5, scores
    assert sum(score >= 0.35 for score in scores) >= 0.98 * len(scores)


def test_different_articles_score_low(sina: dict[str, dict], spots) -> None:
    # Channels between which the corpus has no cross-posted copies.
    rng = random.Random(7)
    groups = []
    for channel in ("SportNews", "testEdu", "Entertainment"):
        texts = [a["text"] for a in sina.values() if a["category"] == channel and len(a["text"]) >= 400]
        groups.append([s for s in map(spots, rng.sample(texts, 60)) if sum(s.values()) >= 10])
    scores = sorted(
        (multiset_jaccard(a, b) for g1, g2 in ((0, 1), (0, 2), (1, 2)) for a in groups[g1] for b in groups[g2]),
        reverse=True,
    )
    assert len(scores) > 8000
    assert scores[0] < 0.2, scores[:5]  # measured: max 0.047, 99th percentile 0.021
    assert scores[len(scores) // 100] < 0.05, scores[:50]


@pytest.mark.parametrize("tau", [0.35, 0.5])
def test_hand_labelled_pairs_duplicates_found_no_false_positives(
    shared_data: Path, sina: dict[str, dict], spots, tau: float
) -> None:
    """DUP pairs reach tau; DIFF and JUNK pairs do not (junk pages have under 4 spots: min_signatures=4)."""
    pairs = [json.loads(line) for line in (shared_data / "sina-news-2018" / "pairs.labelled.jsonl").open(encoding="utf-8")]
    verdicts: dict[str, list[bool]] = {}
    for pair in pairs:
        a, b = spots(sina[pair["a"]]["text"]), spots(sina[pair["b"]]["text"])
        index = SpotSigsIndex(tau, min_signatures=4)
        index.add("a", a)
        verdicts.setdefault(pair["label"], []).append(bool(index.query(b)))
    assert len(verdicts["DUP"]) == 22 and all(verdicts["DUP"])
    assert not any(verdicts["DIFF"]) and not any(verdicts["JUNK"])


def test_index_equals_brute_force_on_sina_reprints(sina: dict[str, dict], spots) -> None:
    """A stream of real articles and their reprints (5-40% edits), spots hashed to 64-bit ints as the pipeline does."""
    rng = random.Random(11)
    articles = [a["text"] for a in sina.values() if len(a["text"]) >= 200]
    texts = rng.sample(articles, 500)
    texts += [reprint(text, rng.uniform(0.05, 0.4), rng, rng.choice(articles)) for text in texts]
    rng.shuffle(texts)
    stream = []
    for text in texts:
        hashed: Counter[int] = Counter()
        for spot, count in spots(text).items():
            hashed[hash64(spot)] += count
        stream.append(hashed)
    for tau in (0.35, 0.6):
        index = SpotSigsIndex(tau)
        sizes: dict[int, int] = {}
        holders: dict[int, dict[int, int]] = {}  # spot -> {document: count}
        found = 0
        for i, doc in enumerate(stream):
            # Brute force, accumulated over the documents sharing a spot (the others score 0):
            # sum of min counts / sum of max counts.
            overlap: Counter[int] = Counter()
            for spot, count in doc.items():
                for key, held in holders.get(spot, {}).items():
                    overlap[key] += min(count, held)
            size = sum(doc.values())
            expected = [(key, common / (size + sizes[key] - common)) for key, common in overlap.items()]
            expected = sorted(((k, s) for k, s in expected if s >= tau), key=lambda hit: (-hit[1], hit[0]))
            assert index.query(doc) == expected
            found += len(expected)
            if index.add(i, doc):
                sizes[i] = size
                for spot, count in doc.items():
                    holders.setdefault(spot, {})[i] = count
        assert found > 300  # most reprints find their original
        stats = index.stats()
        assert stats["compared"] < 0.05 * stats["queries"] * len(sizes)  # brute force compares them all
