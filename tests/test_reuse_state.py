"""The passage-reuse index saved between runs (issue 27): opened from its snapshot and levelled with the store, it
holds the stories a rebuild from the store would hold and finds the same reuses.

A real SQLite store; the texts are random sentences of common Chinese characters (seeded), each story's own, and
the queries quote a passage of one story inside new text.
"""

from __future__ import annotations

import logging
import os
import random
import threading

import pytest
from test_storage import article

from newsdedup.crawl.reuse_index import StoryReuse
from newsdedup.dedup.reuse import ReuseIndex, ReuseTracker, SnapshotError
from newsdedup.dedup.status import NEAR_DUPLICATE
from newsdedup.storage import open_store
from newsdedup.storage.base import RepeatRecord

CHARS = "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种面而方后多定行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体制机当使点从业本去把性好应开它合还因由其些然前外天政四日那社义事平形相全表间样与关各重新线内数正心反你明看原又么利比或但质气第向道命此变条只没结解问意建月公无系军很情者最立代想已通并提直题党程展五果料象员革位入常文总次品式活设及管特件长求老头基资边流路级少图山统接知较将组见计别她手角期根论运农指几九区强放决西被干做必战先回则任取据处理府研"
DAY = "2026-11-{:02d}T08:00:00+00:00"


def sentence(rng: random.Random) -> str:
    return "".join(rng.choice(CHARS) for _ in range(rng.randint(18, 36))) + "。"


def story(rng: random.Random, sentences: int = 16) -> str:
    return "".join(sentence(rng) for _ in range(sentences))


def quoting(rng: random.Random, text: str) -> str:
    """A new text around 120 characters of ``text``."""
    start = rng.randrange(0, len(text) - 130)
    return story(rng, 3) + text[start:start + 120] + story(rng, 3)


def stored(store, texts_and_days):
    """Store each text as a story (its cluster's centre) fetched on its day, committed; the records."""
    records = [article(store, f"http://a/{text[:12]}", text[:16].encode(), text=text, fetched_at=DAY.format(day))
               for text, day in texts_and_days]
    for record in records:
        store.add_article(record)
    store.flush()
    return records


def same_as_rebuild(store, reuse: StoryReuse, *, since: str | None, queries) -> None:
    rebuilt = StoryReuse.rebuild(store, since=since)
    assert sorted(reuse.index.live_ids().tolist()) == sorted(rebuilt.index.live_ids().tolist())
    found = [reuse.find(q, story=None) for q in queries]
    assert found == [rebuilt.find(q, story=None) for q in queries]
    assert sum(map(len, found)) >= len(queries) // 2  # the comparison is not of empty lists


def opened(caplog) -> bool:
    return any("passage-reuse index opened from" in r.getMessage() for r in caplog.records)


@pytest.fixture
def rng():
    return random.Random(27)


def test_a_reopened_snapshot_finds_what_a_rebuild_finds(tmp_path, rng, caplog):
    caplog.set_level(logging.INFO, logger="newsdedup.crawl.reuse_index")
    folder = tmp_path / "state" / "reuse"
    with open_store(f"sqlite:///{tmp_path / 'db.sqlite'}") as store:
        texts = [story(rng) for _ in range(60)]
        stored(store, [(text, 1 + i // 3) for i, text in enumerate(texts)])
        since = DAY.format(6)
        StoryReuse.open(store, folder, since=since).checkpoint()  # no snapshot yet: rebuilt, then saved
        assert not opened(caplog) and (folder / "meta.json").exists()
        reuse = StoryReuse.open(store, folder, since=since)
        assert opened(caplog)
        assert all(segment.file for segment in reuse.index._segments)  # read from the files, not winnowed again
        same_as_rebuild(store, reuse, since=since, queries=[quoting(rng, text) for text in texts])


def test_a_snapshot_ahead_of_the_store_is_rebuilt(tmp_path, rng, caplog):
    """A store restored from a backup older than the snapshot: the stories it lacks must not be found."""
    folder = tmp_path / "reuse"
    texts = [story(rng) for _ in range(30)]
    with open_store(f"sqlite:///{tmp_path / 'db.sqlite'}") as store:
        stored(store, [(text, 1) for text in texts])
        StoryReuse.rebuild(store, since=None, folder=folder).checkpoint()
    with open_store(f"sqlite:///{tmp_path / 'backup.sqlite'}") as backup:
        stored(backup, [(text, 1) for text in texts[:10]])
        reuse = StoryReuse.open(backup, folder, since=None)
        assert "past the store's last article" in caplog.text and not opened(caplog)
        same_as_rebuild(backup, reuse, since=None, queries=[quoting(rng, text) for text in texts[:10]])
        assert reuse.find(quoting(rng, texts[20]), story=None) == []


def test_a_snapshot_behind_the_store_catches_up_and_one_ahead_of_its_commit_rolls_back(tmp_path, rng, caplog):
    caplog.set_level(logging.INFO, logger="newsdedup.crawl.reuse_index")
    folder = tmp_path / "reuse"
    uri = f"sqlite:///{tmp_path / 'db.sqlite'}"
    texts = [story(rng) for _ in range(40)]
    with open_store(uri) as store:
        stored(store, [(text, 1) for text in texts[:20]])
        StoryReuse.rebuild(store, since=None, folder=folder).checkpoint()
        stored(store, [(text, 2) for text in texts[20:30]])  # committed after the snapshot
        reuse = StoryReuse.open(store, folder, since=None)
        assert opened(caplog) and "10 stored since" in caplog.text
        queries = [quoting(rng, text) for text in texts[:30:3]]
        same_as_rebuild(store, reuse, since=None, queries=queries)
        # Stories indexed after the open are saved by the next checkpoint.
        for record in stored(store, [(text, 3) for text in texts[30:35]]):
            reuse.add(record)
        reuse.checkpoint()
        queries += [quoting(rng, text) for text in texts[30:35]]
        same_as_rebuild(store, StoryReuse.open(store, folder, since=None), since=None, queries=queries)
    # kill -9 with a batch open: the snapshot holds stories the store never committed; they are dropped.
    crashed = open_store(uri, batch_size=100)
    crashed.open()
    for text in texts[35:]:
        record = article(crashed, f"http://b/{text[:12]}", text[:16].encode(), text=text, fetched_at=DAY.format(4))
        crashed.add_article(record)
        reuse.add(record)
    reuse.store = crashed
    reuse.checkpoint()
    with open_store(uri) as store:  # the crashed store's batch is not in the database
        reopened = StoryReuse.open(store, folder, since=None)
        assert "5 rolled back" in caplog.text
        same_as_rebuild(store, reopened, since=None, queries=queries)
        assert reopened.find(quoting(rng, texts[36]), story=None) == []


def test_the_retention_window_after_a_reopen_is_the_stores(tmp_path, rng, caplog):
    """Stories leave the window by their cluster's last activity (a copy or a repeat keeps an old story in it), and
    a window wider than the snapshot's reads the stories it lacks back."""
    caplog.set_level(logging.INFO, logger="newsdedup.crawl.reuse_index")
    folder = tmp_path / "reuse"
    texts = [story(rng) for _ in range(30)]
    with open_store(f"sqlite:///{tmp_path / 'db.sqlite'}") as store:
        records = stored(store, [(text, 1 + i) for i, text in enumerate(texts)])
        StoryReuse.open(store, folder, since=DAY.format(5)).checkpoint()
        copy_of, repeated = records[7], records[8]  # fetched on days 8 and 9
        store.add_article(article(store, "http://c/copy", b"c" * 16, text=copy_of.text + "附记。", status=NEAR_DUPLICATE,
                                  duplicate_of=copy_of.url, cluster_id=copy_of.id, fetched_at=DAY.format(29)))
        store.add_repeat(RepeatRecord("http://c/repeat", "c", "转载", None, None, None, None, DAY.format(29),
                                      repeated.fingerprint, repeated.url))
        store.flush()
        queries = [quoting(rng, text) for text in texts]
        later = DAY.format(15)
        reuse = StoryReuse.open(store, folder, since=later)
        assert opened(caplog)
        assert copy_of.id in reuse.index and repeated.id in reuse.index and records[9].id not in reuse.index
        same_as_rebuild(store, reuse, since=later, queries=queries)
        wider = DAY.format(2)  # the snapshot (since day 5) lacks days 2 to 4
        reuse = StoryReuse.open(store, folder, since=wider)
        assert "3 back in it" in caplog.text
        same_as_rebuild(store, reuse, since=wider, queries=queries)


def test_a_later_window_is_levelled_from_the_rows_stored_since_the_snapshot(tmp_path, rng, caplog):
    """A window that moved on since the snapshot (each scheduled run's case) is levelled without reading every story
    of it: the stories whose activity fell between the two starts leave, and a story the snapshot had let go that a
    copy or a repeat stored after the save brought back is read back, as a rebuild holds them."""
    caplog.set_level(logging.INFO, logger="newsdedup.crawl.reuse_index")
    folder = tmp_path / "reuse"
    texts = [story(rng) for _ in range(30)]
    with open_store(f"sqlite:///{tmp_path / 'db.sqlite'}") as store:
        records = stored(store, [(text, 1 + i) for i, text in enumerate(texts)])
        StoryReuse.open(store, folder, since=DAY.format(10)).checkpoint()  # holds the stories of days 10-30
        copied, repeated, left = records[2], records[3], records[12]  # days 3 and 4 (let go), day 13 (held)
        store.add_article(article(store, "http://c/copy", b"c" * 16, text=copied.text + "附记。", status=NEAR_DUPLICATE,
                                  duplicate_of=copied.url, cluster_id=copied.id, fetched_at=DAY.format(29)))
        store.add_repeat(RepeatRecord("http://c/repeat", "c", "转载", None, None, None, None, DAY.format(29),
                                      repeated.fingerprint, repeated.url))
        store.flush()
        queries = [quoting(rng, text) for text in texts]
        later = DAY.format(15)
        reuse = StoryReuse.open(store, folder, since=later)
        assert opened(caplog) and "2 back in it" in caplog.text and "5 left the window" in caplog.text, caplog.text
        assert copied.id in reuse.index and repeated.id in reuse.index and left.id not in reuse.index
        same_as_rebuild(store, reuse, since=later, queries=queries)


def test_a_damaged_snapshot_or_other_parameters_rebuild(tmp_path, rng, caplog):
    caplog.set_level(logging.INFO, logger="newsdedup.crawl.reuse_index")
    folder = tmp_path / "reuse"
    texts = [story(rng) for _ in range(12)]
    with open_store(f"sqlite:///{tmp_path / 'db.sqlite'}") as store:
        stored(store, [(text, 1) for text in texts])
        reuse = StoryReuse.rebuild(store, since=None, folder=folder)
        reuse.checkpoint()
        with pytest.raises(SnapshotError, match="saved with k=8, w=16"):
            ReuseIndex.open(folder, k=6, text_of=str)
        queries = [quoting(rng, text) for text in texts]
        # Each file damaged as a disk or a person might (cut, written over in place keeping its size, deleted):
        # a warning names it, and the index is the rebuild's.
        damages = [("segment-*-keys.npy", lambda path: path.write_bytes(b"torn")),
                   ("segment-*-positions.npy", lambda path: path.write_bytes(os.urandom(path.stat().st_size))),
                   ("stories-*.npz", lambda path: path.write_bytes(b"PK torn")),
                   ("stories-*.npz", lambda path: path.write_bytes(bytes(path.stat().st_size))),
                   ("segment-*-seqs.npy", lambda path: path.unlink()),
                   ("meta.json", lambda path: path.write_text("{")),
                   ("meta.json", lambda path: path.write_text(path.read_text().replace('"count": 12', '"count": 11')))]
        for pattern, damage in damages:
            reuse.checkpoint()
            target = next(folder.glob(pattern))
            damage(target)
            caplog.clear()
            reuse = StoryReuse.open(store, folder, since=None)
            warnings = [record.getMessage() for record in caplog.records if record.levelno == logging.WARNING]
            assert len(warnings) == 1 and str(target) in warnings[0] and not opened(caplog), (pattern, caplog.text)
            same_as_rebuild(store, reuse, since=None, queries=queries)


def test_the_library_tracker_saves_and_opens_with_its_clock(tmp_path):
    report = "国家统计局今天发布数据，十月份居民消费价格同比上涨百分之二点五，涨幅比上月回落零点一个百分点。" * 2
    later = "另一篇报道：今年冬季供暖提前启动，全市各供热单位已完成设备检修，居民家中室温普遍达到二十度以上。" * 2
    texts = {1: report, 2: "评论：" + report, 3: later}
    with pytest.raises(ValueError, match="text_of"):
        ReuseTracker().save(tmp_path)
    tracker = ReuseTracker(retention_days=7, text_of=texts.get)
    tracker.process(1, texts[1], "2026-11-01T08:00:00+00:00")
    assert [r.source for r in tracker.process(2, texts[2], "2026-11-02T08:00:00+00:00")] == [1]
    tracker.save(tmp_path)
    reopened, _ = ReuseTracker.open(tmp_path, retention_days=7, text_of=texts.get)
    assert [r.source for r in reopened.process(4, "又一篇：" + report, "2026-11-03T08:00:00+00:00")] == [2, 1]
    reopened.process(3, later, "2026-11-20T08:00:00+00:00")  # 1, 2 and 4 leave the window
    reopened.save(tmp_path)
    reopened, _ = ReuseTracker.open(tmp_path, retention_days=7, text_of=texts.get)
    assert len(reopened) == 1 and 3 in reopened
    # A page of Nov 5 arriving now is outside the window the saved clock (Nov 20) sets: found against, not kept.
    reopened.process(5, "迟到的一篇：" + later, "2026-11-05T08:00:00+00:00")
    assert len(reopened) == 1


def test_segments_stay_under_their_cap_and_find_what_one_unbounded_index_finds(tmp_path, rng):
    """A saved index of a million stories must never merge its segments into one array in memory: merges stop at
    max_segment_postings, and a mostly dead index is compacted segment by segment (saved ones untouched stay
    mapped)."""
    texts = {i: story(rng) for i in range(1, 41)}
    capped, unbounded = ReuseIndex(max_segment_postings=300, text_of=texts.get), ReuseIndex(text_of=texts.get)
    for story_id, text in texts.items():
        capped.add(story_id, text, when=story_id)
        unbounded.add(story_id, text, when=story_id)
    assert max(map(len, capped._segments)) <= 300 < max(map(len, unbounded._segments))
    queries = [quoting(rng, text) for text in texts.values()]
    assert [capped.find(q) for q in queries] == [unbounded.find(q) for q in queries]
    capped.save(tmp_path)
    capped, _ = ReuseIndex.open(tmp_path, max_segment_postings=300, text_of=texts.get)
    held = capped.postings
    assert capped.expire(before=30) == unbounded.expire(before=30) == 29
    assert sum(map(len, capped._segments)) == capped.postings == unbounded.postings < held / 2  # dead ones dropped
    assert any(segment.file for segment in capped._segments)  # a segment without dead postings stays mapped
    assert [capped.find(q) for q in queries] == [unbounded.find(q) for q in queries]


def test_a_save_written_in_a_thread_while_stories_come_and_go_holds_the_index_as_it_was_begun(tmp_path, rng):
    """begin_save copies what it saves: stories added and removed (merges, a compaction) while its files are
    written in another thread are not in that snapshot, and are in the next one."""
    texts = {n: story(rng) for n in range(1, 121)}
    index = ReuseIndex(text_of=texts.get)
    for n in range(1, 61):
        index.add(n, texts[n], when=1000 + n)
    index.save(tmp_path)
    for n in range(61, 81):
        index.add(n, texts[n], when=1000 + n)
    pending = index.begin_save(tmp_path, extra={"mark": 80})
    writing = threading.Event()
    go_on = threading.Event()

    def write():
        writing.set()
        go_on.wait(60)  # held until the index has changed: the write comes after the changes, for certain
        pending.write()

    writer = threading.Thread(target=write)
    writer.start()
    assert writing.wait(60)
    for n in range(81, 121):
        index.add(n, texts[n], when=1000 + n)
    for n in range(1, 41):  # most postings dead: every segment compacted anew
        index.remove(n)
    go_on.set()
    writer.join(60)
    index.end_save(pending)

    begun, meta = ReuseIndex.open(tmp_path, text_of=texts.get)
    assert meta["mark"] == 80 and sorted(begun.live_ids().tolist()) == list(range(1, 81))
    assert [r.source for r in begun.find(quoting(rng, texts[5]))] == [5]
    index.save(tmp_path)
    now, _ = ReuseIndex.open(tmp_path, text_of=texts.get)
    assert sorted(now.live_ids().tolist()) == list(range(41, 121))
    for n in (45, 100):
        quote = quoting(rng, texts[n])
        assert [r.source for r in now.find(quote)] == [r.source for r in index.find(quote)] == [n]
