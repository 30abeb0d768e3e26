"""rjieba is token-for-token equal to jieba on real Sina news texts (precise mode, HMM on).

The test checks a fixed sample of 300 articles. For the whole corpus (9,054 texts) and the speed ratio run

    python tests/test_text_segment_data.py
"""

from __future__ import annotations

import gzip
import json
import sys
import time
from pathlib import Path

import pytest

from newsdedup.text.segment import get_segmenter

pytestmark = pytest.mark.shared_data

SAMPLE_SIZE = 300


def read_sina_texts(shared_data: Path) -> list[str]:
    path = shared_data / "sina-news-2018" / "articles.jsonl.gz"
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        return [json.loads(line)["text"] for line in lines]


def test_rjieba_equals_jieba_on_sina_sample(shared_data: Path) -> None:
    texts = read_sina_texts(shared_data)
    # Every n-th article: all six categories, TechNews script remnants and junk texts included.
    sample = texts[:: len(texts) // SAMPLE_SIZE][:SAMPLE_SIZE]
    jieba_segmenter, rjieba_segmenter = get_segmenter("jieba"), get_segmenter("rjieba")
    different = [text[:60] for text in sample if jieba_segmenter.cut(text) != rjieba_segmenter.cut(text)]
    assert different == []


def main(shared_data: Path) -> None:
    """Compare the backends on every text: share identical and CPU time of each."""
    texts = read_sina_texts(shared_data)
    jieba_segmenter, rjieba_segmenter = get_segmenter("jieba"), get_segmenter("rjieba")
    started = time.process_time()
    jieba_tokens = [jieba_segmenter.cut(text) for text in texts]
    jieba_seconds = time.process_time() - started
    started = time.process_time()
    rjieba_tokens = [rjieba_segmenter.cut(text) for text in texts]
    rjieba_seconds = time.process_time() - started
    identical = sum(a == b for a, b in zip(jieba_tokens, rjieba_tokens))
    characters = sum(len(text) for text in texts)
    print(f"{identical}/{len(texts)} texts token-for-token identical ({identical / len(texts):.2%})")
    print(
        f"jieba {jieba_seconds:.1f} s CPU ({characters / jieba_seconds / 1000:.0f}k chars/s),"
        f" rjieba {rjieba_seconds:.1f} s CPU ({characters / rjieba_seconds / 1000:.0f}k chars/s):"
        f" {jieba_seconds / rjieba_seconds:.1f}x"
    )


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from conftest import SHARED_DATA

    main(SHARED_DATA)
