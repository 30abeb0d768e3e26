"""The data-only encoding of what crosses Redis (newsdedup.distributed.wire): real entries round-trip, nothing else decodes."""

from __future__ import annotations

import os
import pickle
from array import array
from collections import Counter
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from newsdedup.crawl import analysis
from newsdedup.crawl.analysis import ExtractOptions, PageAnalysis, PageSkipped, analyse_page
from newsdedup.crawl.items import ArticlePage, FetchFailure
from newsdedup.dedup.features import FeatureConfig
from newsdedup.demo.content import load_manifest, render_site
from newsdedup.distributed import wire

BASE = "http://127.0.0.1:8000"


class RunsCode:
    """What an attacker writes to Redis: unpickling it calls ``Path.touch(marker)``."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return Path.touch, (self.marker,)


@pytest.fixture(scope="module")
def site():
    return render_site(BASE, 1)


def analysed(site, method: str) -> list[tuple[ArticlePage, PageAnalysis | PageSkipped]]:
    """Entries as a crawl process publishes them: demo pages analysed by the real extraction and features."""
    saved = analysis._worker_extractor
    analysis.init_worker(FeatureConfig(method=method))
    try:
        entries = []
        manifest = load_manifest()
        for path in manifest["by_day"][1]["new_article_pages"][:6]:
            page = site[path]
            article_page = ArticlePage(url=BASE + path, site="demo", body=page.body, declared_encoding=None,
                                       fetched_at="2026-11-27T08:00:00+00:00", remove_selectors=("div.related",),
                                       listed_title="列表标题", listed_at="2026-11-27T07:00:00+08:00", ticket=7)
            result = analyse_page(page.body, article_page.url, None, article_page.remove_selectors, ExtractOptions())
            entries.append((article_page, result))
        return entries
    finally:
        analysis._worker_extractor = saved


@pytest.mark.parametrize("method", ["hybrid", "esimhash", "dwdcs"])
def test_analysed_demo_pages_round_trip_to_equal_entries(site, method):
    codec = wire.stream_codec()
    entries = analysed(site, method)
    results = [result for _, result in entries]
    assert any(isinstance(r, PageAnalysis) for r in results)
    for entry in entries:
        back = wire.check_entry(codec.loads(codec.dumps(entry)))
        assert back == entry
        assert back[0].body == entry[0].body and back[0].ticket == entry[0].ticket  # fields compare=False skips
        if isinstance(entry[1], PageAnalysis):
            article, features = back[1].article, back[1].features
            assert article.block_hashes == entry[1].article.block_hashes  # compare=False: checked here
            assert article.body_hashes.typecode == "Q" and article.body_hashes == entry[1].article.body_hashes
            assert type(features.spots) is type(entry[1].features.spots)
            if method == "hybrid":
                assert features.simhash is not None and features.spots
            if method == "dwdcs":
                assert features.key_concepts is not None and isinstance(features.key_concepts.positions, tuple)


def test_a_failure_and_a_skip_round_trip():
    codec = wire.stream_codec()
    failure = FetchFailure("http://x/a.html", "x", "http_500", "HTTP 500", "2026-11-27T08:00:00+00:00")
    skipped = (ArticlePage("http://x/b.html", "x", b"", "gb18030", "2026-11-27T08:00:00+00:00"),
               PageSkipped("not_html", "the page is a PDF file, not HTML"))
    assert wire.check_entry(codec.loads(codec.dumps(failure))) == failure
    assert wire.check_entry(codec.loads(codec.dumps(skipped))) == skipped


def test_plain_values_round_trip_with_their_types():
    value = {"t": (1, "二", None), b"k": [b"\x00\xff", True, 1.5], 3: {frozenset({1}), "s"}, "c": Counter({5: 2}),
             "a": array("Q", [2**64 - 1, 0]), "d": datetime(2026, 11, 27, 8, tzinfo=timezone(timedelta(hours=8))),
             "nested": {"$": "tuple", "v": []}}  # a dict that looks tagged is still a dict
    back = wire.DATA.loads(wire.DATA.dumps(value))
    assert back == value
    assert type(back["t"]) is tuple and type(back["c"]) is Counter and back["a"].typecode == "Q"
    assert {type(member) for member in back[3]} == {frozenset, str}


@pytest.mark.parametrize("payload, message", [
    (b'{"$": "os.system", "v": ["touch /tmp/x"]}', "unknown tag"),
    (b'{"$": "ArticlePage", "v": {"url": "u"}}', "unknown tag"),  # a dataclass the plain codec does not allow
    (b'{"$": "bytes", "v": "not base64!"}', "malformed 'bytes'"),
    (b'{"$": "array", "v": {"t": "Q", "v": [-1]}}', "malformed 'array'"),
    (b'{"$": "tuple", "v": 3}', "a sequence needs a list"),
    (b'{"$": "dict", "v": [[1]]}', "pairs"),
    (b'{"url": "u"}', "not a tagged value"),
    (b"\x80\x04K\x01.", "not a JSON payload"),  # a pickle
    (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
])
def test_what_is_not_this_encoding_raises_a_wire_error(payload, message):
    with pytest.raises(wire.WireError, match=message):
        wire.DATA.loads(payload)


def test_a_dataclass_with_wrong_fields_or_the_wrong_shape_raises_a_wire_error():
    codec = wire.stream_codec()
    with pytest.raises(wire.WireError, match="malformed 'PageSkipped'"):
        codec.loads(b'{"$": "PageSkipped", "v": {"reason": "x", "detail": "y", "exec": "z"}}')
    with pytest.raises(wire.WireError, match="malformed 'FetchFailure'"):
        codec.loads(b'{"$": "FetchFailure", "v": {"url": "u"}}')
    with pytest.raises(wire.WireError, match="PageSkipped.reason is not a <class 'str'>"):
        codec.loads(b'{"$": "PageSkipped", "v": {"reason": ["x"], "detail": "y"}}')
    page = ArticlePage("http://x/b.html", "x", b"", None, "2026-11-27T08:00:00+00:00", remove_selectors=("a", 1))
    with pytest.raises(wire.WireError, match="ArticlePage.remove_selectors is not a tuple"):
        codec.loads(codec.dumps(page))  # a value of the wrong type, deep inside
    with pytest.raises(wire.WireError, match="not a stream entry"):
        wire.check_entry(codec.loads(b'{"$": "PageSkipped", "v": {"reason": "x", "detail": "y"}}'))


def test_a_pickle_that_would_run_code_is_refused_and_runs_nothing(tmp_path):
    marker = tmp_path / "ran"
    payload = pickle.dumps(RunsCode(marker))
    for codec in (wire.DATA, wire.stream_codec()):
        with pytest.raises(wire.WireError):
            codec.loads(payload)
    assert not marker.exists()
    pickle.loads(payload)  # the payload does run code when unpickled: the test above means something
    assert marker.exists()
    os.remove(marker)


def test_only_data_and_allowed_dataclasses_encode():
    with pytest.raises(wire.WireError, match="cannot encode"):
        wire.DATA.dumps({"f": RunsCode(Path("x"))})
    with pytest.raises(wire.WireError, match="cannot encode"):
        wire.DATA.dumps(PageSkipped("a", "b"))  # a dataclass the plain codec does not allow
