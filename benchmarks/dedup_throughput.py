"""What ``newsdedup dedup`` costs per document on one core, stage by stage, on the 9,054 Sina texts.

    python benchmarks/dedup_throughput.py [--method spotsigs] [--repeats 3] [--data ../shared/data]

Every stage is the product's own call, timed on the same texts in corpus order, in this process:

* ``features``: :meth:`FeatureExtractor.features` whole (what a worker process does per document);
* ``normalise``: :func:`normalize_text`; ``segment``: the configured segmenter's ``cut`` on the normalised text
  (rjieba via ``auto``; ``segment_jieba``: jieba on the same text, for comparison, outside the totals);
* ``signatures``: the rest of ``features`` (exact fingerprint, token filter, spot signatures or Simhash);
* ``dedup``: :meth:`DedupEngine.process` on those features: the exact stage, then Single-Pass with its index.

Medians of ``--repeats`` runs (the machine is shared; the load average is printed).  Needs ../shared/data.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import time
from pathlib import Path

from newsdedup.dedup.engine import DedupEngine
from newsdedup.dedup.features import METHODS, FeatureConfig, FeatureExtractor
from newsdedup.dedup.single_pass import NearSettings, SinglePassClusterer, make_detector
from newsdedup.text.normalize import normalize_text
from newsdedup.text.segment import get_segmenter


def seconds_of(function, inputs) -> tuple[float, list]:
    started = time.process_time()
    outputs = [function(value) for value in inputs]
    return time.process_time() - started, outputs


def run_once(method: str, texts: list[str]) -> dict[str, float]:
    extractor = FeatureExtractor(FeatureConfig(method=method))
    jieba = get_segmenter("jieba")
    extractor.features("预热一下分词器。")  # load the dictionaries outside the timing
    jieba.cut("预热一下分词器。")
    spent: dict[str, float] = {}
    spent["features"], features = seconds_of(extractor.features, texts)
    spent["normalise"], normalised = seconds_of(normalize_text, texts)
    spent["segment"], _ = seconds_of(extractor._segmenter.cut, normalised)
    spent["segment_jieba"], _ = seconds_of(jieba.cut, normalised)
    spent["signatures"] = spent["features"] - spent["normalise"] - spent["segment"]
    dedup = DedupEngine.in_memory(SinglePassClusterer(make_detector(NearSettings(method=method))), expected=len(texts))
    spent["dedup"], _ = seconds_of(lambda pair: dedup.process(*pair), list(enumerate(features)))
    return spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--method", choices=METHODS, default="spotsigs")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parent.parent.parent / "shared" / "data")
    args = parser.parse_args()
    path = args.data / "sina-news-2018" / "articles.jsonl.gz"
    if not path.is_file():
        raise SystemExit(f"{path} not found: pass --data pointing at the shared data folder")
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        texts = [json.loads(line)["text"] for line in lines]
    print(f"load average before: {os.getloadavg()}", flush=True)
    runs = [run_once(args.method, texts) for _ in range(args.repeats)]
    ms = {stage: round(1000 * statistics.median(run[stage] for run in runs) / len(texts), 3) for stage in runs[0]}
    per_doc = ms["features"] + ms["dedup"]
    print(json.dumps({"method": args.method, "docs": len(texts), "ms_per_doc": ms, "total_ms_per_doc": round(per_doc, 3),
                      "docs_per_s_one_core": round(1000 / per_doc, 1), "load_average_after": os.getloadavg()}, indent=1))


if __name__ == "__main__":
    main()
