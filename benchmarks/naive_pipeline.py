"""The baseline the issue names: trafilatura + jieba + Simhash in the reactor thread, one item at a time.

Used by crawl_throughput.py only; deliberately naive (no worker processes, jieba not rjieba).
"""

from __future__ import annotations

import jieba
import trafilatura

from newsdedup.dedup.simhash import simhash


class NaivePipeline:
    def __init__(self) -> None:
        self.fingerprints: list[int] = []

    def process_item(self, item):
        text = trafilatura.extract(item.body.decode("utf-8", "replace"), deduplicate=False) or ""
        counts: dict[str, float] = {}
        for word in jieba.lcut(text):
            if word.strip():
                counts[word] = counts.get(word, 0.0) + 1.0
        self.fingerprints.append(simhash(counts))
        return item
