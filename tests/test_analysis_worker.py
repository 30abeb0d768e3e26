"""The worker processes of the analysis pool: what they set up once for every page they analyse."""

from __future__ import annotations

import gc

from newsdedup.crawl.analysis import AnalysisPool
from newsdedup.dedup.features import FeatureConfig


def test_a_worker_collects_garbage_rarely_and_never_scans_what_it_loaded_at_start():
    pool = AnalysisPool(FeatureConfig(), workers=1)
    pool.start()
    try:
        threshold = pool.submit(gc.get_threshold).result(timeout=120)
        frozen = pool.submit(gc.get_freeze_count).result(timeout=120)
    finally:
        pool.shutdown()
    assert threshold[0] == 10_000
    assert frozen > 10_000  # the segmenter and the word lists (~50,000 objects)


def test_the_inline_pool_leaves_the_crawl_process_gc_as_it_was():
    before = gc.get_threshold()
    pool = AnalysisPool(FeatureConfig(), workers=0)
    pool.start()
    assert gc.get_threshold() == before
