"""The persisted dedup state (newsdedup.dedupstore.state) against the store it caches, on SQLite and PostgreSQL:
behind the store it catches up, ahead of it it is rolled back, the retention window expires from it without a
rebuild, and a state it cannot use is built again. Each check compares with what a rebuild from the store holds."""

from __future__ import annotations

import json
import logging
import random
from collections import Counter
from datetime import datetime, timedelta, timezone

import pytest

from newsdedup.clock import utc_iso
from newsdedup.dedup.features import FeatureConfig, pack_spots
from newsdedup.dedup.single_pass import NearSettings
from newsdedup.dedupstore.state import FolderBusy, UrlState, WindowState, seconds
from newsdedup.storage import open_store
from newsdedup.storage.base import ArticleRecord, RepeatRecord
from server_fixtures import postgres, store_uri  # noqa: F401 - fixtures
from state_helpers import damage, folder_held, rebuilt_centres, rebuilt_fingerprints, stored_urls

NOW = datetime.now(timezone.utc).replace(microsecond=0)
FEATURES = FeatureConfig()
NEAR = NearSettings()


def days_ago(days: float) -> str:
    return utc_iso(NOW - timedelta(days=days))


def spots_of(story: int, variant: int = 0) -> bytes:
    """60 spots of ``story``; a variant changes 5 of them (a near copy: Jaccard about 0.85)."""
    rng = random.Random(story)
    spots = [rng.randrange(1, 2**63) for _ in range(60)]
    for i in range(5 if variant else 0):
        spots[i] = random.Random(story * 1000 + variant * 10 + i).randrange(1, 2**63)
    return pack_spots(Counter(spots))


class Writer:
    """Rows into a store as the crawl writes them: centres, near copies, exact repeats."""

    def __init__(self, store) -> None:
        self.store = store

    def centre(self, name: str, days: float, story: int) -> int:
        article_id = self.store.new_article_id()
        self.store.add_article(self._article(article_id, name, days, story, 0, cluster_id=article_id))
        return article_id

    def near_copy(self, name: str, days: float, story: int, centre: int) -> int:
        article_id = self.store.new_article_id()
        self.store.add_article(self._article(article_id, name, days, story, 1, cluster_id=centre,
                                             status="near_duplicate", duplicate_of=f"http://s/{centre}"))
        return article_id

    def repeat(self, name: str, days: float, story: int, of_url: str, cluster_id: int) -> None:
        self.store.add_repeat(RepeatRecord(url=f"http://s/{name}", site="s", title="t", published_at=None,
                                           author=None, source=None, canonical_url=None, fetched_at=days_ago(days),
                                           fingerprint=self.fingerprint(story, 0), repeat_of=of_url,
                                           cluster_id=cluster_id))

    @staticmethod
    def fingerprint(story: int, variant: int) -> bytes:
        return f"{story}-{variant}".encode().ljust(16, b".")

    def _article(self, article_id, name, days, story, variant, **extra) -> ArticleRecord:
        return ArticleRecord(id=article_id, url=f"http://s/{name}", site="s", title="t", text=f"text {story}",
                             published_at=None, author=None, source=None, canonical_url=None,
                             fetched_at=days_ago(days), fingerprint=self.fingerprint(story, variant),
                             spots=spots_of(story, variant), method="spotsigs", **extra)


def open_window(folder, store, since, error_rate=1e-6, **near):
    settings = NearSettings(**near) if near else NEAR
    return WindowState.open(folder, store, FEATURES, settings, exact_error_rate=error_rate, retention_days=30,
                            since=since)


def open_urls(folder, store, since):
    return UrlState.open(folder, store, error_rate=1e-7, retention_days=30, since=since, key=str)


def assert_equals_rebuild(window: WindowState, store, since) -> None:
    assert window.near.documents() == rebuilt_centres(store, since=since)
    assert all(fingerprint in window.exact for fingerprint in rebuilt_fingerprints(store, since=since))


def first_rows(store, writer: Writer) -> dict:
    """Ten stories 20 days old, one with a near copy and one with a repeat."""
    ids = {story: writer.centre(f"c{story}", 20, story) for story in range(10)}
    writer.near_copy("n0", 19, 0, ids[0])
    writer.repeat("r1", 19, 1, f"http://s/c{1}", ids[1])
    store.flush()
    return ids


def test_a_state_behind_the_store_catches_up_from_the_rows_above_its_marks(store_uri, tmp_path):
    since = days_ago(30)
    with open_store(store_uri) as store:
        writer = Writer(store)
        ids = first_rows(store, writer)
        window, report = open_window(tmp_path / "state", store, since)
        assert report.rebuilt and report.caught_up_rows == 12
        window.checkpoint()
        window.close()
        urls, _ = open_urls(tmp_path / "state", store, since)
        urls.save()

        # Committed after the state was saved (then kill -9): two new stories, a near copy and a repeat raising
        # two earlier stories' last activity.
        writer.centre("c10", 2, 10)
        writer.centre("c11", 1, 11)
        writer.near_copy("n2", 1, 2, ids[2])
        writer.repeat("r3", 0.5, 3, "http://s/c3", ids[3])
        store.flush()

        window, report = open_window(tmp_path / "state", store, since)
        assert not report.rebuilt and not report.rolled_back and report.caught_up_rows == 4
        assert_equals_rebuild(window, store, since)
        documents = window.near.documents()
        assert documents[ids[2]] == seconds(days_ago(1)) and documents[ids[3]] == seconds(days_ago(0.5))
        assert len(documents) == 12
        window.close()
        urls, report = open_urls(tmp_path / "state", store, since)
        assert not report.rebuilt and report.caught_up_rows == 4
        assert all(url in urls for url in stored_urls(store))


def test_a_state_ahead_of_the_store_is_rolled_back(store_uri, tmp_path, postgres_or_sqlite_copy):
    since = days_ago(30)
    ahead_uri, behind_uri = postgres_or_sqlite_copy
    for uri, more in ((ahead_uri, True), (behind_uri, False)):
        with open_store(uri) as store:
            writer = Writer(store)
            ids = first_rows(store, writer)
            if more:  # rows the other store never committed: a new story and a copy raising story 4's activity
                writer.centre("c10", 1, 10)
                writer.near_copy("n4", 1, 4, ids[4])
                store.flush()
    state = tmp_path / "state"
    with open_store(ahead_uri) as store:
        window, _ = open_window(state, store, since)
        window.checkpoint()
        window.close()
        urls, _ = open_urls(state, store, since)
        urls.save()
    with open_store(behind_uri) as store:
        window, report = open_window(state, store, since)
        assert report.rolled_back and not report.rebuilt
        assert_equals_rebuild(window, store, since)  # story 10 gone, story 4's time the store's
        assert window.marks == {"articles": store.last_article_id(), "repeats": store.last_repeat_id()}
        window.close()
        urls, report = open_urls(state, store, since)
        assert "http://s/c10" not in urls and "http://s/n4" not in urls
        assert all(url in urls for url in stored_urls(store))


@pytest.fixture()
def postgres_or_sqlite_copy(store_uri, tmp_path, request):
    """Two empty stores of the same backend."""
    if store_uri.startswith("sqlite"):
        return store_uri, f"sqlite:///{tmp_path / 'other.sqlite'}"
    return store_uri, request.getfixturevalue("postgres").create_database()


def test_the_retention_window_expires_from_the_state_without_a_rebuild(tmp_path):
    state = tmp_path / "state"
    with open_store(f"sqlite:///{tmp_path / 'db.sqlite'}") as store:
        writer = Writer(store)
        old = writer.centre("old", 40, 1)  # a story 40 days old
        kept = writer.centre("kept", 40, 2)  # as old, but a copy 5 days ago keeps it in the window
        new = writer.centre("new", 10, 3)
        store.flush()
        window, _ = open_window(state, store, days_ago(60))
        window.checkpoint()
        window.close()
        writer.near_copy("kept-copy", 5, 2, kept)
        writer.centre("later", 4, 4)  # the copy is not the last row taken in
        store.flush()
        window, report = open_window(state, store, days_ago(60))  # takes the copy in
        window.checkpoint()
        window.close()

        since = days_ago(30)
        window, report = open_window(state, store, since)
        assert not report.rebuilt and report.caught_up_rows == 0
        assert_equals_rebuild(window, store, since)
        assert old not in window.near.documents()
        assert Writer.fingerprint(1, 0) not in window.exact  # its day's generation is gone
        assert Writer.fingerprint(2, 0) in window.exact  # filed again with its story's new activity
        window.close()

        since = days_ago(7)  # a narrower window later on
        window, report = open_window(state, store, since)
        assert not report.rebuilt
        documents = window.near.documents()
        assert documents == rebuilt_centres(store, since=since) and kept in documents and new not in documents
        window.close()


def test_a_state_built_otherwise_or_damaged_is_built_again_from_the_store(tmp_path):
    state = tmp_path / "state"
    since = days_ago(30)
    with open_store(f"sqlite:///{tmp_path / 'db.sqlite'}") as store:
        first_rows(store, Writer(store))
        window, report = open_window(state, store, since)
        assert report.rebuilt
        window.checkpoint()
        window.close()
        window, report = open_window(state, store, since, spotsigs_tau=0.6)  # other thresholds
        assert report.rebuilt
        window.checkpoint()
        window.close()
        window, report = open_window(state, store, since, error_rate=1e-5, spotsigs_tau=0.6)  # another filter
        assert report.rebuilt and window.exact.error_rate == 1e-5
        window.checkpoint()
        window.close()
        window, report = open_window(state, store, days_ago(60), 1e-5, spotsigs_tau=0.6)  # the window grew
        assert report.rebuilt
        window.checkpoint()
        window.close()
        (state / "near" / "MANIFEST.json").write_text("{not json")
        window, report = open_window(state, store, days_ago(60), 1e-5, spotsigs_tau=0.6)
        assert report.rebuilt_parts == ["near"] and not report.rebuilt  # the exact filter was kept
        assert window.near.documents() == rebuilt_centres(store, since=days_ago(60))
        window.close()


class Stats(dict):
    def set_value(self, key, value):
        self[key] = value


def test_a_state_folder_it_cannot_write_leaves_the_crawl_rebuilding_from_the_store(tmp_path):
    from newsdedup.crawl.indexes import DedupIndexes

    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with open_store(f"sqlite:///{tmp_path / 'db.sqlite'}") as store:
        first_rows(store, Writer(store))
        indexes = DedupIndexes(FEATURES, NEAR, exact_error_rate=1e-3, retention_days=30, reuse=False,
                               state_dir=blocker / "state")
        stats = Stats()
        indexes.rebuild(store, stats)
        assert indexes.window is None and stats["newsdedup/near/known_centres"] == 10
        assert indexes.engine.exact_verdict("again", Writer.fingerprint(3, 0)) is not None
        indexes.after_commit(store)
        indexes.close()


#: Each kind of file of a state folder, found by a pattern, and the part a damage to it builds again.
STATE_FILES = {
    "exact Bloom generation": ("exact/g*.bits", "exact"),
    "exact manifest": ("exact/MANIFEST.json", "exact"),
    "near segment spots": ("near/seg-*/spots.npy", "near"),
    "near segment times": ("near/seg-*/times-*.npy", "near"),
    "near segment prefix lists": ("near/seg-*/prefix_docs.npy", "near"),
    "near log": ("near/log-*", "near"),
    "near manifest": ("near/MANIFEST.json", "near"),
    "window manifest": ("window.json", "window"),
    "URL Bloom generation": ("urls/g*.bits", "urls"),
    "URL manifest": ("urls/MANIFEST.json", "urls"),
    "urls manifest": ("urls.json", "urls"),
}


@pytest.mark.parametrize("how", ["cut", "random bytes", "deleted"])
@pytest.mark.parametrize("kind", list(STATE_FILES))
def test_a_damaged_state_file_is_named_and_its_part_built_again_from_the_store(store_uri, tmp_path, caplog, kind, how):
    """Whatever file of the state is damaged, its size kept or not: a warning names it, that part (only) is built
    again from the store, and the state holds what a rebuild holds."""
    since = days_ago(30)
    state = tmp_path / "state"
    with open_store(store_uri) as store:
        writer = Writer(store)
        ids = first_rows(store, writer)
        window, _ = open_window(state, store, since)
        window.checkpoint()
        window.close()
        urls, _ = open_urls(state, store, since)
        urls.close()
        writer.centre("c10", 2, 10)  # taken in at the next open: into the near index's log, not a segment
        writer.near_copy("n2", 1, 2, ids[2])
        store.flush()
        window, _ = open_window(state, store, since)
        window.close()
        assert (state / "near").glob("log-*") and json.loads((state / "window.json").read_text())["near_log"][1] > 0
        writer.centre("c11", 1, 11)  # and a row the state has not seen
        store.flush()

        pattern, part = STATE_FILES[kind]
        target = sorted(state.glob(pattern), key=lambda path: path.stat().st_size)[-1]
        damage(target, how)
        caplog.clear()
        caplog.set_level(logging.INFO, logger="newsdedup.dedupstore.state")
        if part == "urls":
            urls, report = open_urls(state, store, since)
            assert report.rebuilt
            assert all(url in urls for url in stored_urls(store))
            urls.close()
        else:
            window, report = open_window(state, store, since)
            if part == "window":
                assert report.rebuilt
            else:
                assert report.rebuilt_parts == [part] and not report.rebuilt
            assert_equals_rebuild(window, store, since)
            window.close()
        warnings = [record.getMessage() for record in caplog.records if record.levelno == logging.WARNING]
        assert len(warnings) == 1 and str(target) in warnings[0], caplog.text


def test_a_second_process_cannot_take_a_state_folder_until_the_first_lets_go(tmp_path):
    """The folder's lock: another process waits, then gets FolderBusy naming the holder; a holder killed with
    kill -9 lets go at once (the kernel drops its lock)."""
    state = tmp_path / "state"
    with open_store(f"sqlite:///{tmp_path / 'db.sqlite'}") as store:
        first_rows(store, Writer(store))
        window, _ = open_window(state, store, days_ago(30))
        window.close()
        with folder_held(state) as holder:
            with pytest.raises(FolderBusy, match=f"pid {holder.pid}"):
                WindowState.open(state, store, FEATURES, NEAR, exact_error_rate=1e-6, retention_days=30,
                                 since=days_ago(30), lock_wait=0.2)
            with pytest.raises(FolderBusy):
                UrlState.open(state, store, error_rate=1e-7, retention_days=30, since=days_ago(30), key=str,
                              lock_wait=0)
        window, report = open_window(state, store, days_ago(30))  # kill -9 released it
        urls, _ = open_urls(state, store, days_ago(30))  # the same process shares its hold
        assert not report.rebuilt
        window.close()
        urls.close()
