"""PersistedBloomFilter: reopening gives the same answers, a filter behind the store catches up, one ahead of it
is rolled back to what the store has, expiry drops whole days, and the false-positive rate stays bounded."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap

import pytest

from newsdedup.dedup.bloom_disk import PersistedBloomFilter
from newsdedup.dedup.durable import StateDamaged

DAY = 86_400


def url(i: int) -> str:
    return f"https://news.example.com/2026/{i}.html"


class Store:
    """The truth: rows of one table (row id, URL, fetch time), as the SQLite store keeps them."""

    def __init__(self) -> None:
        self.rows: list[tuple[int, str, int]] = []

    def insert(self, n: int, *, time: int) -> None:
        start = len(self.rows)
        self.rows += [(start + i, url(start + i), time + i) for i in range(n)]

    def after(self, mark: int):
        return [row for row in self.rows if row[0] > mark]

    @property
    def mark(self) -> int:
        return len(self.rows) - 1


def feed(bloom: PersistedBloomFilter, rows) -> None:
    for row, key, time in rows:
        bloom.add(key, time=time, source="articles", row=row)


def filled(folder, store: Store, window_start: int = 0) -> PersistedBloomFilter:
    """A new filter of capacity 100 a generation holding the store's rows from ``window_start``."""
    bloom = PersistedBloomFilter.create(folder, capacity=100, error_rate=1e-3)
    feed(bloom, [row for row in store.rows if row[2] >= window_start])
    return bloom


def rebuilt(tmp_path, store: Store, window_start: int = 0) -> PersistedBloomFilter:
    return filled(tmp_path / "rebuilt", store, window_start)


def two_days(first: int, second: int) -> Store:
    store = Store()
    store.insert(first, time=10 * DAY)
    store.insert(second, time=11 * DAY)
    return store


def test_reopened_filter_answers_as_before_and_batches_equal_single_adds(tmp_path):
    store = two_days(300, 300)
    one = filled(tmp_path / "one", store)
    batch = PersistedBloomFilter.create(tmp_path / "batch", capacity=100, error_rate=1e-3)
    for day, first in ((10, 0), (11, 300)):
        batch.add_many([url(i) for i in range(first, first + 300)], time=day * DAY, source="articles",
                       first_row=first)
    one.save()
    reopened = PersistedBloomFilter.open(tmp_path / "one", store_marks={"articles": store.mark})
    assert reopened.marks == {"articles": 599}
    probes = [url(i) for i in range(0, 1200, 3)]
    assert [p in reopened for p in probes] == [p in one for p in probes] == [p in batch for p in probes]
    assert all(url(i) in reopened for i in range(600))
    assert len(reopened._generations[10].filters) >= 2  # a full filter got a successor (capacity 100)
    assert reopened.size_bytes == one.size_bytes


def test_a_filter_behind_the_store_catches_up_from_its_mark(tmp_path):
    store = Store()
    store.insert(200, time=10 * DAY)
    bloom = filled(tmp_path / "urls", store)
    bloom.save()
    store.insert(150, time=11 * DAY)  # committed by the store, never saved in the filter (killed)
    feed(bloom, store.after(199))
    del bloom
    reopened = PersistedBloomFilter.open(tmp_path / "urls", store_marks={"articles": store.mark})
    assert reopened.marks == {"articles": 199}
    assert sum(url(i) in reopened for i in range(200, 350)) < 5  # unsaved: gone but for false positives
    feed(reopened, store.after(reopened.marks["articles"]))
    assert all(url(i) in reopened for i in range(350))
    assert _bits(reopened) == _bits(rebuilt(tmp_path, store))


def test_a_filter_ahead_of_the_store_is_rolled_back_to_it(tmp_path):
    store = two_days(200, 200)
    bloom = filled(tmp_path / "urls", store)
    feed(bloom, [(400 + i, url(400 + i), 11 * DAY + 500 + i) for i in range(50)])  # never committed
    bloom.save()
    reopened = PersistedBloomFilter.open(tmp_path / "urls", store_marks={"articles": store.mark})
    assert reopened.marks == {"articles": 199}  # day 11 held uncommitted rows: dropped, re-read from row 200
    assert sorted(reopened._generations) == [10]
    feed(reopened, store.after(reopened.marks["articles"]))
    assert _bits(reopened) == _bits(rebuilt(tmp_path, store))
    assert sum(url(i) in reopened for i in range(400, 450)) < 3


def test_expiry_drops_whole_generations_without_a_rebuild(tmp_path):
    store = Store()
    for day in range(10, 15):
        store.insert(100, time=day * DAY)
    bloom = filled(tmp_path / "urls", store)
    assert bloom.expire(12 * DAY + 3600) == 2  # days 10 and 11; day 12 is partly in the window: kept
    bloom.save()
    reopened = PersistedBloomFilter.open(tmp_path / "urls", store_marks={"articles": store.mark})
    assert sorted(reopened._generations) == [12, 13, 14]
    assert all(url(i) in reopened for i in range(200, 500))
    assert sum(url(i) in reopened for i in range(200)) < 3
    assert _bits(reopened) == _bits(rebuilt(tmp_path, store, window_start=12 * DAY))
    assert len(list((tmp_path / "urls").iterdir())) == 1 + sum(len(g.filters) for g in reopened._generations.values())


def test_false_positive_rate_stays_under_the_target_over_a_window(tmp_path):
    bloom = PersistedBloomFilter.create(tmp_path / "urls", capacity=2_000, error_rate=0.01, generations=10)
    for day in range(10):
        bloom.add_many([url(day * 5_000 + i) for i in range(5_000)], time=day * DAY, source="articles",
                       first_row=day * 5_000)  # 2.5x a generation's capacity: successors take the rest
    assert all(url(i) in bloom for i in range(0, 50_000, 7))
    false = sum(f"https://other.example.org/{i}" in bloom for i in range(50_000))
    assert false / 50_000 < 0.01


def test_bad_input_gets_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="error_rate"):
        PersistedBloomFilter.create(tmp_path / "a", capacity=10, error_rate=1.5)
    bloom = PersistedBloomFilter.create(tmp_path / "a", capacity=10, error_rate=1e-3)
    bloom.add("x", time=0, source="articles", row=5)
    with pytest.raises(ValueError, match="not above the mark 5"):
        bloom.add("y", time=0, source="articles", row=5)
    with pytest.raises(ValueError, match="source"):
        bloom.add("y", time=0, source="", row=6)
    with pytest.raises(FileNotFoundError):
        PersistedBloomFilter.open(tmp_path / "nothing")
    bloom.save()


@pytest.mark.parametrize("damage", ["cut", "random bytes", "zeroed", "deleted", "manifest written over"])
def test_a_damaged_file_is_never_used_and_named(tmp_path, damage):
    """Whatever happened to a bit array or the manifest, keeping its size or not, open names the file."""
    bloom = PersistedBloomFilter.create(tmp_path / "a", capacity=100, error_rate=1e-3)
    bloom.add_many((f"k{i}" for i in range(50)), time=0, source="articles", first_row=1)
    bloom.save()
    manifest = json.loads((tmp_path / "a" / "MANIFEST.json").read_text())
    target = tmp_path / "a" / manifest["generation_list"][0]["filters"][0]["file"]
    if damage == "manifest written over":
        target = tmp_path / "a" / "MANIFEST.json"
    size = target.stat().st_size
    if damage == "cut":
        target.write_bytes(target.read_bytes()[:size // 2])
    elif damage == "random bytes":
        target.write_bytes(os.urandom(size))
    elif damage == "zeroed":
        target.write_bytes(bytes(size))
    elif damage == "deleted":
        target.unlink()
    else:
        text = target.read_text()
        target.write_text(text.replace('"count": 50', '"count": 49'))  # valid JSON, one figure changed
    with pytest.raises(StateDamaged) as raised:
        PersistedBloomFilter.open(tmp_path / "a")
    assert raised.value.path == target and target.name in str(raised.value)


def test_a_writer_killed_mid_save_reopens_to_a_whole_saved_state(tmp_path):
    """kill -9 while the writer saves again and again: the folder always opens to a saved state whose marks
    the store can catch up from, and catching up gives the filter a rebuild from the store would."""
    script = textwrap.dedent(f"""
        import sys
        from newsdedup.dedup.bloom_disk import PersistedBloomFilter
        bloom = PersistedBloomFilter.create({str(tmp_path / "urls")!r}, capacity=50, error_rate=1e-3)
        row = 0
        while True:
            for _ in range(40):
                bloom.add(f"https://news.example.com/2026/{{row}}.html", time=86400 * (10 + row // 300),
                          source="articles", row=row)
                row += 1
            bloom.save()
            print(row - 1, flush=True)
    """)
    writer = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    committed = [int(writer.stdout.readline()) for _ in range(25)][-1]
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait()
    writer.stdout.close()
    store = Store()
    store.rows = [(i, url(i), 86400 * (10 + i // 300)) for i in range(committed + 1)]
    reopened = PersistedBloomFilter.open(tmp_path / "urls", store_marks={"articles": store.mark})
    assert reopened.marks["articles"] <= store.mark
    feed(reopened, store.after(reopened.marks["articles"]))
    expected = PersistedBloomFilter.create(tmp_path / "rebuilt", capacity=50, error_rate=1e-3)
    feed(expected, store.rows)
    assert _bits(reopened) == _bits(expected)


def _bits(bloom: PersistedBloomFilter) -> dict:
    """Each generation's bit arrays, to compare a caught-up filter with one rebuilt from the store."""
    return {start: [bits.array.tobytes() for bits in generation.filters]
            for start, generation in bloom._generations.items()}
