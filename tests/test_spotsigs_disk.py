"""PersistentSpotSigsIndex: the same decisions as brute force and SpotSigsIndex, across segments, reopening,
rollback to the store's row ids, torn logs and the retention window."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from newsdedup.dedup.spotsigs import multiset_jaccard
from newsdedup.dedup.spotsigs_disk import PersistentSpotSigsIndex, spot_tokens
from newsdedup.dedup.spotsigs_index import SpotSigsIndex
from state_helpers import damage

TAU, CONTAINMENT, MIN_SPOTS, RATIO, MIN_SIGNATURES = 0.5, 0.8, 10, 0.15, 5


class Corpus:
    """Small spot multisets with the shapes that matter: a skewed vocabulary (frequent spots), one-off spots,
    repeated spots, edited copies, short versions (contained) and extended versions (containing)."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.vocabulary = [self.rng.getrandbits(64) for _ in range(400)]
        self.docs: list[Counter] = []

    def spot(self) -> int:
        if self.rng.random() < 0.2:
            return self.rng.getrandbits(64)
        return self.vocabulary[min(int(self.rng.paretovariate(0.7)) - 1, len(self.vocabulary) - 1)]

    def fresh(self) -> Counter:
        spots: list[int] = []
        for _ in range(self.rng.randint(3, 120)):
            spots.append(self.rng.choice(spots) if spots and self.rng.random() < 0.1 else self.spot())
        return Counter(spots)

    def variant(self, doc: Counter) -> Counter:
        occurrences = list(doc.elements())
        self.rng.shuffle(occurrences)
        shape = self.rng.random()
        if shape < 0.4:  # an edited copy
            cut = int(len(occurrences) * self.rng.uniform(0.0, 0.5))
            return Counter(occurrences[cut:] + [self.spot() for _ in range(cut)])
        if shape < 0.7:  # a short version
            return Counter(occurrences[: max(1, int(len(occurrences) * self.rng.uniform(0.1, 0.6)))])
        extra = int(len(occurrences) * self.rng.uniform(0.1, 4.0))  # an extended version
        return Counter(occurrences + [self.spot() for _ in range(extra)])

    def next(self) -> Counter:
        doc = self.variant(self.rng.choice(self.docs)) if self.docs and self.rng.random() < 0.5 else self.fresh()
        self.docs.append(doc)
        return doc


def brute_force(stored: dict[int, Counter], query: Counter) -> tuple[list, list]:
    """Jaccard hits and containment hits by comparing every stored document, as the method defines them."""
    length = sum(query.values())
    jaccard, contained = [], []
    for key, doc in stored.items():
        similarity = multiset_jaccard(query, doc)
        if length >= MIN_SIGNATURES and similarity >= TAU:
            jaccard.append((key, similarity))
        smaller, larger = min(length, doc.total()), max(length, doc.total())
        common = sum((query & doc).values())
        if length >= max(MIN_SPOTS, MIN_SIGNATURES) and smaller >= MIN_SPOTS and smaller / larger >= RATIO \
                and common / smaller >= CONTAINMENT:
            contained.append((key, common / smaller))
    return sorted(jaccard, key=lambda hit: (-hit[1], hit[0])), sorted(contained, key=lambda hit: (-hit[1], hit[0]))


def searched(index, query: Counter) -> tuple[list, list]:
    return index.query(query), index.contained(query, min_containment=CONTAINMENT, min_spots=MIN_SPOTS,
                                               min_ratio=RATIO)


def open_index(path, **kwargs) -> PersistentSpotSigsIndex:
    kwargs.setdefault("flush_docs", 40)
    kwargs.setdefault("max_segment_docs", 200)
    return PersistentSpotSigsIndex(path, tau=TAU, min_signatures=MIN_SIGNATURES, min_containment=CONTAINMENT,
                                   **kwargs)


def killed_when(script: str, ready, timeout: float = 120.0) -> bool:
    """Run ``script`` in a child Python and ``kill -9`` it as soon as ``ready()`` holds (or at ``timeout``);
    whether it held."""
    child = subprocess.Popen([sys.executable, "-c", script])
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and child.poll() is None:
            try:
                if ready():
                    return True
            except (OSError, ValueError):  # a file caught mid-replace: look again
                pass
            time.sleep(0.01)
        return False
    finally:
        os.kill(child.pid, signal.SIGKILL) if child.poll() is None else None
        child.wait()


def test_tokens_turn_multiset_overlap_into_set_overlap():
    a = Counter({1: 3, 2: 1, 7: 2})
    b = Counter({1: 2, 2: 2, 9: 1})
    tokens_a = spot_tokens(np.array(sorted(a), np.uint64), np.array([a[s] for s in sorted(a)], np.uint32))
    tokens_b = spot_tokens(np.array(sorted(b), np.uint64), np.array([b[s] for s in sorted(b)], np.uint32))
    assert len(set(tokens_a.tolist())) == a.total()
    assert len(set(tokens_a.tolist()) & set(tokens_b.tolist())) == sum((a & b).values()) == 3


def test_decisions_equal_brute_force_and_the_in_memory_index(tmp_path):
    corpus = Corpus(seed=7)
    index = open_index(tmp_path / "near")
    memory = SpotSigsIndex(tau=TAU, min_signatures=MIN_SIGNATURES)
    stored: dict[int, Counter] = {}
    checked = found = contained_found = 0
    for key in range(600):
        doc = corpus.next()
        if key % 3 == 0 and stored:  # Single-Pass queries, then stores
            expected = brute_force(stored, doc)
            got = searched(index, doc)
            assert got == expected, key
            assert got == searched(memory, doc)
            checked += 1
            found += bool(expected[0])
            contained_found += bool(expected[1])
        if index.add(key, doc, time=1000 + key):
            stored[key] = doc
        memory.add(key, doc)
    assert len(index.segments) >= 2 and index.stats()["delta"] > 0  # segments and the delta both searched
    assert found > 50 and contained_found > 50, (found, contained_found)
    # Queries at a higher tau, and reopening from the files only.
    index.close()
    reopened = open_index(tmp_path / "near")
    assert len(reopened) == len(stored) and reopened.high_water_mark == 599
    for doc in corpus.docs[::5]:
        assert searched(reopened, doc) == brute_force(stored, doc)
        assert reopened.query(doc, tau=0.7) == [hit for hit in brute_force(stored, doc)[0] if hit[1] >= 0.7]
    key = next(iter(stored))
    assert reopened.jaccard(key, corpus.docs[0]) == multiset_jaccard(corpus.docs[0], stored[key])


def test_reopening_rolls_back_rows_the_store_never_committed(tmp_path):
    corpus = Corpus(seed=11)
    docs = [corpus.next() for _ in range(150)]
    index = open_index(tmp_path / "near", flush_docs=50)
    for key, doc in enumerate(docs):
        index.add(key, doc, time=5000)
    index.close()  # rows 0-99 are in segments, 100-149 in the log
    behind = open_index(tmp_path / "near", store_mark=120)
    assert behind.high_water_mark == 120
    survivors = {key: doc for key, doc in enumerate(docs) if key <= 120 and doc.total() >= MIN_SIGNATURES}
    assert len(behind) == len(survivors)
    for doc in docs[::4]:
        assert searched(behind, doc) == brute_force(survivors, doc)
    behind.close()
    further = open_index(tmp_path / "near", store_mark=60)  # behind what the segments hold
    assert further.high_water_mark == 60 and 61 not in further and 60 in further
    # The store reuses the abandoned row ids: the new documents under them are the ones found.
    replacement = Counter({spot: 2 for spot in range(1, 30)})
    further.add(61, replacement, time=6000)
    assert further.query(replacement) == [(61, 1.0)]
    further.checkpoint()
    assert further.query(replacement) == [(61, 1.0)]


def test_a_torn_log_record_is_cut_off(tmp_path):
    corpus = Corpus(seed=3)
    index = open_index(tmp_path / "near", flush_docs=1000, max_segment_docs=1000)
    docs = {}
    for key in range(30):
        doc = corpus.next()
        if index.add(key, doc, time=10):
            docs[key] = doc
    log = index._log_path
    index.close()
    data = log.read_bytes()
    log.write_bytes(data[:-7])  # kill -9 in the middle of the last record
    reopened = open_index(tmp_path / "near")
    last = max(docs)
    kept = {key: doc for key, doc in docs.items() if key != last}
    assert last not in reopened and reopened.high_water_mark == max(kept)
    assert len(reopened) == len(kept)
    for doc in corpus.docs:
        assert searched(reopened, doc) == brute_force(kept, doc)
    # A log whose only record is torn: the torn bytes are cut, so what is logged after them is read back.
    lost, later = Counter({spot: 1 for spot in range(100, 140)}), Counter({spot: 1 for spot in range(200, 240)})
    reopened.add(last, lost, time=11)
    log = reopened._log_path
    reopened.close()
    log.write_bytes(log.read_bytes()[:-3])
    again = open_index(tmp_path / "near")
    assert again.query(lost) == []
    again.add(last + 1, later, time=12)
    again.close()
    assert open_index(tmp_path / "near").query(later) == [(last + 1, 1.0)]


def test_retention_window_touch_and_compaction(tmp_path):
    corpus = Corpus(seed=5)
    index = open_index(tmp_path / "near", flush_docs=20, max_segment_docs=60)
    docs = {}
    for key in range(120):
        doc = corpus.next()
        if index.add(key, doc, time=key):  # the time of a story's last copy, in seconds
            docs[key] = doc
    touched = min(docs)
    index.touch(touched, time=500, row=120)  # its story got a copy, stored as row 120
    index.expire(100)
    window = {key: doc for key, doc in docs.items() if key >= 100 or key == touched}
    assert len(index) == len(window)
    for doc in corpus.docs:
        assert searched(index, doc) == brute_force(window, doc)
    before = index.stats()["bytes_on_disk"]
    index.checkpoint()  # expired documents are dropped from the files
    assert index.stats()["bytes_on_disk"] < before / 2
    index.close()
    reopened = open_index(tmp_path / "near")
    assert len(reopened) == len(window) and reopened.high_water_mark == 120
    for doc in corpus.docs[::3]:
        assert searched(reopened, doc) == brute_force(window, doc)


def test_bad_input_gets_a_clear_error(tmp_path):
    index = open_index(tmp_path / "near")
    index.add(5, Counter({1: 5}), time=1)
    with pytest.raises(ValueError, match="not above the high-water mark"):
        index.add(5, Counter({2: 5}), time=1)
    with pytest.raises(ValueError, match="unsigned 64-bit"):
        index.add(6, Counter({"的:新闻": 5}), time=1)
    with pytest.raises(ValueError, match="built for tau"):
        index.query(Counter({1: 5}), tau=0.3)
    index.close()
    with pytest.raises(ValueError, match="built for tau 0.5"):
        PersistentSpotSigsIndex(tmp_path / "near", tau=0.6)


def test_pairs_exactly_at_the_thresholds_through_their_most_frequent_spots(tmp_path):
    """The adversarial case for prefix filtering: what two documents share are the segment's most frequent spots,
    so only the last tokens of each prefix can meet, and the overlap is exactly the least that qualifies."""
    rng = random.Random(1)
    common = [rng.getrandbits(64) for _ in range(40)]
    own = lambda n: [rng.getrandbits(64) for _ in range(n)]  # noqa: E731 - spots no other document has
    stored: dict[int, Counter] = {}
    for key in range(60):  # fillers make the common spots frequent
        stored[key] = Counter(rng.sample(common, 12) + own(30))
    queries = []
    for key in range(60, 100, 2):
        shared = rng.sample(common, 20)
        stored[key] = Counter(shared + own(10))  # Jaccard with the query: 20 / 40 = 0.5 exactly
        queries.append(Counter(shared + own(10)))
        short = rng.sample(shared, 8)
        stored[key + 1] = Counter(short + own(2))  # 10 spots, 8 of them in a 60-spot query: containment 0.8
        queries.append(Counter(shared + short + own(32)))
    index = open_index(tmp_path / "near", flush_docs=1000, max_segment_docs=1000)
    index.bulk_add((key, doc, 1) for key, doc in stored.items())
    for query in queries:
        expected = brute_force(stored, query)
        assert expected[0] or expected[1]
        assert searched(index, query) == expected


def test_a_writer_killed_mid_write_reopens_to_what_it_logged(tmp_path):
    """kill -9 while a process adds documents: reopening keeps every complete record and nothing else."""
    import textwrap

    script = textwrap.dedent(f"""
        import random, sys
        from collections import Counter
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from test_spotsigs_disk import Corpus, open_index
        corpus = Corpus(seed=13)
        index = open_index({str(tmp_path / "near")!r}, flush_docs=100_000, max_segment_docs=100_000)
        for key in range(100_000):
            index.add(key, corpus.next(), time=7)
    """)
    def logged() -> bool:  # a few hundred records
        logs = list((tmp_path / "near").glob("log-*")) if (tmp_path / "near").exists() else []
        return bool(logs) and logs[0].stat().st_size > 200_000

    assert killed_when(script, logged), "the writer never logged"
    reopened = open_index(tmp_path / "near")
    written = reopened.high_water_mark
    assert written > 100
    corpus = Corpus(seed=13)
    docs = [corpus.next() for _ in range(written + 1)]
    stored = {key: doc for key, doc in enumerate(docs) if doc.total() >= MIN_SIGNATURES}
    assert len(reopened) == len(stored)
    for doc in docs[::7]:
        assert searched(reopened, doc) == brute_force(stored, doc)
    # The store committed less than was logged: roll back to its last row.
    reopened.close()
    mark = written // 2
    rolled = open_index(tmp_path / "near", store_mark=mark)
    kept = {key: doc for key, doc in stored.items() if key <= mark}
    assert rolled.high_water_mark == mark and len(rolled) == len(kept)
    for doc in docs[::7]:
        assert searched(rolled, doc) == brute_force(kept, doc)


def test_the_whole_rule_decides_alike_on_disk_in_memory_and_by_brute_force(tmp_path):
    """Both indexes decide the containment fallback through one function: with ``whole_below`` too."""
    corpus = Corpus(seed=11)
    index = open_index(tmp_path / "near", flush_docs=30, max_segment_docs=100)
    memory = SpotSigsIndex(tau=TAU, min_signatures=MIN_SIGNATURES)
    stored: dict[int, Counter] = {}
    dropped = 0
    for key in range(240):
        doc = corpus.next()
        if key % 2 == 0 and stored:
            arguments = {"min_containment": CONTAINMENT, "min_spots": MIN_SPOTS, "min_ratio": RATIO, "whole_below": 0.6}
            got = index.contained(doc, **arguments)
            assert got == memory.contained(doc, **arguments), key
            ratio = lambda k: min(doc.total(), stored[k].total()) / max(doc.total(), stored[k].total())  # noqa: E731
            expected = [(k, c) for k, c in brute_force(stored, doc)[1] if c >= 0.99 or ratio(k) >= 0.6]
            assert got == expected, key
            dropped += len(brute_force(stored, doc)[1]) - len(got)
        if index.add(key, doc, time=1000 + key):
            stored[key] = doc
        memory.add(key, doc)
    assert len(index.segments) >= 1 and dropped > 10, dropped


def as_arrays(docs: list[Counter]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Documents as bulk_add_arrays takes them: offsets, distinct ascending spots, counts."""
    offsets = np.zeros(len(docs) + 1, dtype=np.int64)
    np.cumsum([len(doc) for doc in docs], out=offsets[1:])
    spots = np.array([spot for doc in docs for spot in sorted(doc)], dtype=np.uint64)
    counts = np.array([doc[spot] for doc in docs for spot in sorted(doc)], dtype=np.uint32)
    return offsets, spots, counts


def test_arrays_bulk_load_gives_the_decisions_of_brute_force(tmp_path):
    corpus = Corpus(seed=23)
    docs = [corpus.next() for _ in range(500)]
    index = open_index(tmp_path / "near", max_segment_docs=150)
    keys = np.arange(10, 510, dtype=np.int64)
    assert index.bulk_add_arrays(keys[:300], np.full(300, 7000), *as_arrays(docs[:300])) == \
        sum(doc.total() >= MIN_SIGNATURES for doc in docs[:300])
    offsets, spots, counts = as_arrays(docs[300:])
    index.bulk_add_arrays(keys[300:], np.full(200, 7000), offsets, spots, counts)
    assert len(index.segments) >= 3 and index.high_water_mark == 509
    stored = {int(key): doc for key, doc in zip(keys, docs) if doc.total() >= MIN_SIGNATURES}
    assert index.signatures(12) == (dict(docs[2]) if 12 in stored else None)
    index.close()
    reopened = open_index(tmp_path / "near", store_mark=509)
    assert len(reopened) == len(stored)
    for doc in corpus.docs[::4] + [corpus.next() for _ in range(60)]:
        assert searched(reopened, doc) == brute_force(stored, doc)
    with pytest.raises(ValueError, match="above the high-water mark 509"):
        reopened.bulk_add_arrays(np.array([509]), np.array([1]), *as_arrays([docs[0]]))
    with pytest.raises(ValueError, match="distinct and ascending"):
        reopened.bulk_add_arrays(np.array([600]), np.array([1]), np.array([0, 2]), np.array([9, 3], np.uint64),
                                 np.array([1, 1]))
    with pytest.raises(ValueError, match="one count a spot"):
        reopened.bulk_add_arrays(np.array([600]), np.array([1]), np.array([0, 2]), np.array([3, 9], np.uint64),
                                 np.array([1]))


def test_a_probe_budget_reads_fewer_lists_and_reports_only_exact_pairs(tmp_path):
    corpus = Corpus(seed=31)
    docs = [corpus.next() for _ in range(600)]
    indexes = []
    for name, budget in (("lossless", None), ("budget", 1600)):  # 800 postings a path in each of the two segments
        index = open_index(tmp_path / name, max_segment_docs=300, probe_budget=budget)
        index.bulk_add_arrays(np.arange(600, dtype=np.int64), np.full(600, 9000), *as_arrays(docs))
        indexes.append(index)
    lossless, budgeted = indexes
    stored = {key: doc for key, doc in enumerate(docs) if doc.total() >= MIN_SIGNATURES}
    expected = found = 0
    for doc in [corpus.next() for _ in range(150)]:
        truth = brute_force(stored, doc)
        assert searched(lossless, doc) == truth
        for hits, exact in zip(searched(budgeted, doc), truth):
            assert set(hits) <= set(exact)  # every reported pair is a pair of the method, score for score
            expected += len(exact)
            found += len(hits)
    assert expected > 100
    assert 0.5 * expected < found < expected  # the budget drops pairs met only through frequent spots
    with pytest.raises(ValueError, match="probe_budget"):
        open_index(tmp_path / "bad", probe_budget=0)


@pytest.mark.parametrize("shape", ["uniform", "clustered", "few"])
def test_the_token_directory_finds_what_a_binary_search_finds(shape):
    from newsdedup.dedup.spotsigs_disk import _directory_steps, _locate, _token_directory

    rng = np.random.default_rng(5)
    if shape == "uniform":  # 64-bit hashes: about 16 a bucket
        tokens = np.unique(rng.integers(0, 2**64 - 1, 50_000, dtype=np.uint64, endpoint=True))
    elif shape == "clustered":  # every token in the first bucket: the search is a whole binary search
        tokens = np.unique(rng.integers(0, 5_000_000, 20_000, dtype=np.uint64))
    else:
        tokens = np.array([7, 2**63, 2**64 - 1], dtype=np.uint64)
    needles = np.concatenate([tokens[rng.integers(0, len(tokens), 500)], tokens[:1], tokens[-1:],
                              rng.integers(0, 2**64 - 1, 500, dtype=np.uint64, endpoint=True),
                              np.array([0, 1, 2**64 - 1], dtype=np.uint64), tokens[:50] + np.uint64(1)])
    directory = _token_directory(tokens)
    assert _locate(tokens, directory, _directory_steps(directory), needles).tolist() == \
        np.searchsorted(tokens, needles).tolist()


SEGMENT_FILES = ["keys.npy", "spot_offsets.npy", "spots.npy", "counts.npy", "tokens.npy", "full_offsets.npy",
                 "full_docs.npy", "prefix_offsets.npy", "prefix_docs.npy", "prefix_pos.npy", "lengths.npy",
                 "token_directory.npy", "times", "deleted"]


@pytest.mark.parametrize("how", ["cut", "random bytes", "zeroed", "deleted"])
@pytest.mark.parametrize("file", SEGMENT_FILES)
def test_a_damaged_segment_file_is_named_and_never_used(tmp_path, file, how):
    """Every file of a segment is verified against its checksum in the manifest at open, whatever the damage;
    times and deleted are those of the last checkpoint (written anew under another name each time)."""
    from newsdedup.dedup.durable import StateDamaged

    corpus = Corpus(seed=41)
    index = open_index(tmp_path / "near", max_segment_docs=300)
    index.bulk_add_arrays(np.arange(300, dtype=np.int64), np.full(300, 9000), *as_arrays(
        [corpus.next() for _ in range(300)]))
    index.touch(5, time=9500)  # times rewritten at the next checkpoint
    index.checkpoint()
    index.close()
    manifest = json.loads((tmp_path / "near" / "MANIFEST.json").read_text())
    [segment] = manifest["segments"]
    name = segment["saved"][file] if file in ("times", "deleted") else file
    assert name in segment["checksums"] and name != f"{file}.npy" or file not in ("times", "deleted")
    assert sorted(p.name for p in (tmp_path / "near" / segment["name"]).iterdir()) == sorted(segment["checksums"])
    target = tmp_path / "near" / segment["name"] / name
    damage(target, how)
    with pytest.raises(StateDamaged) as raised:
        open_index(tmp_path / "near", max_segment_docs=300, store_mark=299)
    assert raised.value.path == target


@pytest.mark.parametrize("how", ["cut", "random bytes", "deleted", "one figure changed"])
def test_a_damaged_manifest_is_named_and_never_used(tmp_path, how):
    from newsdedup.dedup.durable import StateDamaged

    corpus = Corpus(seed=43)
    index = open_index(tmp_path / "near")
    for key in range(100):
        index.add(key, corpus.next(), time=9000)
    index.checkpoint()
    index.close()
    target = tmp_path / "near" / "MANIFEST.json"
    if how == "one figure changed":  # valid JSON still: only the checksum tells
        target.write_text(target.read_text().replace('"high_water_mark": 99', '"high_water_mark": 98'))
    elif how == "deleted":  # a new, empty index: the caller that knows a state was saved tells it apart
        target.unlink()
        assert len(open_index(tmp_path / "near")) == 0
        return
    else:
        damage(target, how)
    with pytest.raises(StateDamaged) as raised:
        open_index(tmp_path / "near", store_mark=99)
    assert raised.value.path == target


@pytest.mark.parametrize("how", ["cut", "random bytes", "zeroed", "deleted"])
def test_a_log_damaged_before_the_bytes_its_caller_saved_is_named(tmp_path, how):
    """Records after the last checkpoint live in the log; the bytes sync_log made durable (and the caller saved
    its marks after) must read back whole; a torn record after them is a crash mid-write, cut off as before."""
    from newsdedup.dedup.durable import StateDamaged

    corpus = Corpus(seed=47)
    index = open_index(tmp_path / "near", flush_docs=1000, max_segment_docs=1000, auto_checkpoint=False)
    for key in range(60):
        index.add(key, corpus.next(), time=9000)
    synced = index.sync_log()
    index.add(60, corpus.next(), time=9000)  # after the save: may be torn
    index.close()
    log = tmp_path / "near" / synced[0]
    assert synced[1] < log.stat().st_size
    with open(log, "r+b") as handle:  # a torn last record is cut off, not damage
        handle.truncate(log.stat().st_size - 3)
    reopened = open_index(tmp_path / "near", flush_docs=1000, max_segment_docs=1000, auto_checkpoint=False, log_synced=synced)
    assert len(reopened) == 60
    synced = reopened.sync_log()  # reopening wrote the records into a segment and started a new log
    for key in range(61, 70):
        reopened.add(key, corpus.next(), time=9000)
    synced = reopened.sync_log()
    reopened.close()
    damage(tmp_path / "near" / synced[0], how)
    with pytest.raises(StateDamaged) as raised:
        open_index(tmp_path / "near", flush_docs=1000, max_segment_docs=1000, auto_checkpoint=False, log_synced=synced)
    assert raised.value.path == tmp_path / "near" / synced[0]


@pytest.mark.parametrize("with_doc_position", [True, False])
def test_the_positional_filter_decides_alike_when_document_numbers_do_not_fit_a_packed_key(with_doc_position):
    from types import SimpleNamespace

    from newsdedup.dedup.spotsigs_disk import _positional

    rng = np.random.default_rng(11)
    small = rng.integers(0, 300, 4000)
    large = small.astype(np.int64) + (1 << 45)  # past what a packed key holds beside the positions: a lexsort
    lengths = (small % 97 + 20).astype(np.int64)
    query_position = rng.integers(0, 400, 4000)
    doc_position = rng.integers(0, 60, 4000) if with_doc_position else None
    query = SimpleNamespace(length=400)
    decide = dict(needed=lambda lengths: lengths // 3, shared=lambda lengths: np.full(len(lengths), 3))
    packed = _positional(small, lengths, query_position, doc_position, query, **decide)
    sorted_apart = _positional(large, lengths, query_position, doc_position, query, **decide)
    assert 0 < len(packed) < 300
    assert (sorted_apart - (1 << 45)).tolist() == packed.tolist()


def _segment_in_one_piece(docs, tau: float, min_containment: float) -> dict[str, np.ndarray]:
    """The segment's arrays as defined: every token sorted at once, in RAM (the writer before chunked builds)."""
    from newsdedup.dedup import spotsigs_disk as disk
    n = len(docs.keys)
    lengths = np.add.reduceat(docs.counts.astype(np.int64), docs.spot_offsets[:-1])
    tokens = spot_tokens(docs.spots, docs.counts)
    doc_of = np.repeat(np.arange(n, dtype=np.uint32), lengths)
    order = np.argsort(tokens, kind="stable")
    sorted_tokens = tokens[order]
    starts = np.flatnonzero(np.concatenate(([True], sorted_tokens[1:] != sorted_tokens[:-1])))
    distinct = sorted_tokens[starts]
    full_offsets = np.append(starts, len(tokens)).astype(np.int64)
    frequency = np.diff(full_offsets)
    token_id = np.empty(len(tokens), dtype=np.uint32)
    token_id[order] = np.repeat(np.arange(len(distinct), dtype=np.uint32), frequency)
    rank = np.empty(len(distinct), dtype=np.uint64)
    rank[np.argsort(frequency, kind="stable")] = np.arange(len(distinct), dtype=np.uint64)
    in_doc_order = np.argsort((doc_of.astype(np.uint64) << np.uint64(32)) | rank[token_id])
    token_id, in_doc = token_id[in_doc_order], doc_of[in_doc_order]
    position = np.arange(len(tokens)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    keep = position < np.repeat(lengths - disk._prefix_overlap(lengths, tau, min_containment)
                                + disk.PREFIX_EXTENSION, lengths)
    by_token = np.argsort((token_id[keep].astype(np.uint64) << np.uint64(32)) | in_doc[keep])
    prefix_offsets = np.zeros(len(distinct) + 1, dtype=np.int64)
    np.cumsum(np.bincount(token_id[keep], minlength=len(distinct)), out=prefix_offsets[1:])
    return {"keys": docs.keys, "times": docs.times, "spot_offsets": docs.spot_offsets, "spots": docs.spots,
            "counts": docs.counts, "lengths": lengths.astype(np.uint32), "tokens": distinct,
            "full_offsets": full_offsets, "full_docs": doc_of[order], "prefix_offsets": prefix_offsets,
            "prefix_docs": in_doc[keep][by_token],
            "prefix_pos": np.minimum(position[keep][by_token], disk._POSITION_CAP).astype(np.uint16),
            "token_directory": disk._token_directory(distinct)}


@pytest.mark.parametrize("chunk_spots", [1, 97, 10**9])
def test_a_segment_built_a_chunk_at_a_time_equals_one_built_in_one_piece(tmp_path, monkeypatch, chunk_spots):
    """The chunked writer (bounded memory) writes the very arrays of the definition, whatever the chunk size,
    and a merge of segments reads them back in the same chunks."""
    from newsdedup.dedup import spotsigs_disk as disk
    monkeypatch.setattr(disk, "_BUILD_CHUNK_SPOTS", chunk_spots)
    corpus = Corpus(11)
    stored = {key: corpus.next() for key in range(1, 301)}
    index = open_index(tmp_path / "near", flush_docs=50, max_segment_docs=300)
    for key, doc in stored.items():  # segments of 50, merged as they come (LSM)
        index.add(key, doc, time=1_000 + key)
    index.checkpoint()
    assert sum(segment.size for segment in index.segments) == sum(doc.total() >= MIN_SIGNATURES
                                                                  for doc in stored.values())
    assert max(segment.size for segment in index.segments) > 50  # merges happened
    for segment in index.segments:
        kept = {key: stored[key] for key in np.asarray(segment.keys).tolist()}
        spots = [sorted(doc.items()) for doc in kept.values()]
        expected = _segment_in_one_piece(disk._Docs(
            np.array(list(kept), dtype=np.int64), np.array([1_000 + key for key in kept], dtype=np.uint32),
            np.cumsum([0] + [len(items) for items in spots]).astype(np.int64),
            np.array([spot for items in spots for spot, _ in items], dtype=np.uint64),
            np.array([count for items in spots for _, count in items], dtype=np.uint32)), TAU, CONTAINMENT)
        for name, values in expected.items():
            got = np.load(segment.folder / segment.saved.get(name, f"{name}.npy"))  # times, deleted: the saved ones
            assert got.dtype == values.dtype, name
            assert np.array_equal(got, values), name


def test_a_bounded_build_spills_runs_and_writes_the_segment_of_one_piece(tmp_path, monkeypatch):
    """#36: a segment is built by an external sort whose memory is set by ``_BUILD_CHUNK_SPOTS``. Under a tiny
    bound (dozens of spilled runs, a hundred token buckets) a few thousand documents give, file for file, the
    segment built in one piece, and a store built by merges under that bound answers as the in-memory index."""
    from newsdedup.dedup import spotsigs_disk as disk
    corpus = Corpus(seed=41)
    stored = {key: corpus.next() for key in range(1, 3001)}
    items = [sorted(doc.items()) for doc in stored.values()]
    columns = (np.array(list(stored), dtype=np.int64), np.array([1_000 + key for key in stored], dtype=np.int64),
               np.cumsum([0] + [len(doc) for doc in items]).astype(np.int64),
               np.array([spot for doc in items for spot, _ in doc], dtype=np.uint64),
               np.array([count for doc in items for _, count in doc], dtype=np.int64))
    whole = open_index(tmp_path / "whole", flush_docs=3000, max_segment_docs=3000)
    assert whole.bulk_add_arrays(*columns) == sum(doc.total() >= MIN_SIGNATURES for doc in stored.values())
    [one_piece] = whole.segments
    assert len(columns[3]) <= disk._BUILD_CHUNK_SPOTS  # the default: one run, one bucket
    monkeypatch.setattr(disk, "_BUILD_CHUNK_SPOTS", 1_000)
    assert len(columns[3]) // 1_000 >= 64  # the tiny bound: that many runs and buckets at least
    bounded = open_index(tmp_path / "bounded", flush_docs=3000, max_segment_docs=3000)
    bounded.bulk_add_arrays(*columns)
    [segment] = bounded.segments
    assert segment.checksums == one_piece.checksums
    assert sorted(path.name for path in segment.folder.iterdir()) == sorted(segment.checksums)  # no scratch left
    merged = open_index(tmp_path / "merged", flush_docs=250, max_segment_docs=3000)  # merges read their inputs
    memory = SpotSigsIndex(tau=TAU, min_signatures=MIN_SIGNATURES)
    for key, doc in stored.items():
        merged.add(key, doc, time=1_000 + key)
        memory.add(key, doc)
    merged.checkpoint()
    assert max(part.size for part in merged.segments) > 250
    for doc in corpus.docs[::20]:
        assert searched(bounded, doc) == searched(merged, doc) == searched(memory, doc) == searched(whole, doc)


def test_background_merges_keep_every_decision_and_carry_changes_made_while_they_run(tmp_path):
    """A merge built in a thread: the index answers from the segments it merges meanwhile; touches, discards and
    the window's start that happen before the merged segment is swapped in are carried into it."""
    corpus = Corpus(seed=23)
    index = open_index(tmp_path / "near", flush_docs=30, max_segment_docs=240, background_merges=True,
                       auto_checkpoint=False)
    stored: dict[int, Counter] = {}
    times: dict[int, int] = {}
    rng = random.Random(5)
    started = swapped = 0
    for key in range(900):
        doc = corpus.next()
        if key % 4 == 0 and stored:
            window = {k: d for k, d in stored.items() if times[k] >= index.window_start}
            assert searched(index, doc) == brute_force(window, doc), key
        if index.add(key, doc, time=1_000 + key):
            stored[key], times[key] = doc, 1_000 + key
        if index._merge is not None:  # changes while a merge is planned or running
            inputs = {k for segment in index._merge.plan.inputs for k in np.asarray(segment.keys).tolist()}
            chosen = sorted(inputs & stored.keys())
            if chosen:
                touched, gone = rng.choice(chosen), rng.choice(chosen)
                index.touch(touched, time=5_000 + key, row=key)
                times[touched] = 5_000 + key
                if gone != touched:
                    index.discard(gone, row=key)
                    del stored[gone]
        if key == 600:
            index.expire(1_300)
        before = index._merge
        if index.needs_checkpoint:
            index.checkpoint()
            started += index._merge is not None and index._merge is not before
            swapped += before is not None and index._merge is not before
    index.checkpoint(wait=True)
    assert index._merge is None and started >= 5 and swapped >= 4, (started, swapped)
    window = {k: d for k, d in stored.items() if times[k] >= 1_300}
    assert index.documents() == {k: times[k] for k in window}
    for doc in corpus.docs[::7]:
        assert searched(index, doc) == brute_force(window, doc)
    index.close()
    reopened = open_index(tmp_path / "near", max_segment_docs=240)
    assert reopened.documents() == {k: times[k] for k in window}
    assert sorted(p.name for p in (tmp_path / "near").iterdir() if p.name.startswith("seg")) == \
        sorted(segment.name for segment in reopened.segments)  # no merge's files left behind


def test_closing_during_a_background_merge_leaves_the_state_as_published(tmp_path):
    corpus = Corpus(seed=29)
    index = open_index(tmp_path / "near", flush_docs=50, max_segment_docs=1_000, background_merges=True,
                       auto_checkpoint=False)
    docs = {}
    for key in range(400):
        doc = corpus.next()
        if index.add(key, doc, time=key + 1):
            docs[key] = doc
        if index.needs_checkpoint:
            index.checkpoint()
    assert index._merge is not None
    index.close()  # the running merge is cancelled or finished, and not published
    reopened = open_index(tmp_path / "near", max_segment_docs=1_000)
    assert reopened.documents() == {key: key + 1 for key in docs}
    assert not [p for p in (tmp_path / "near").iterdir() if p.name.endswith(".tmp")]
    for doc in corpus.docs[::9]:
        assert searched(reopened, doc) == brute_force(docs, doc)


def test_a_writer_killed_during_a_background_merge_reopens_to_what_it_committed(tmp_path):
    """kill -9 while a merge is being built in its thread: the half-built segment is removed on open and the
    state holds every document the log or a published segment holds."""
    import textwrap

    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from test_spotsigs_disk import Corpus, open_index
        from newsdedup.dedup import spotsigs_disk
        spotsigs_disk._BUILD_CHUNK_SPOTS = 40  # slow builds: a merge is under way most of the time
        corpus = Corpus(seed=17)
        index = open_index({str(tmp_path / "near")!r}, flush_docs=100, max_segment_docs=100_000,
                           background_merges=True)
        for key in range(100_000):
            index.add(key, corpus.next(), time=7)
    """)
    folder = tmp_path / "near"

    def building() -> bool:  # a few merges published, and one being built
        manifest = folder / "MANIFEST.json"
        published = manifest.exists() and json.loads(manifest.read_text())["next_segment"] > 30
        return published and bool(list(folder.glob("seg-*.tmp")))

    assert killed_when(script, building), "no merge was caught being built"
    reopened = open_index(folder)
    assert not list(folder.glob("*.tmp"))
    written = reopened.high_water_mark
    corpus = Corpus(seed=17)
    docs = [corpus.next() for _ in range(written + 1)]
    stored = {key: doc for key, doc in enumerate(docs) if doc.total() >= MIN_SIGNATURES}
    assert written > 300 and len(reopened) == len(stored)
    for doc in docs[::11]:
        assert searched(reopened, doc) == brute_force(stored, doc)


def test_merges_fill_segments_and_keep_the_partial_ones_few(tmp_path):
    """A crawl's writer flushes a few documents at a time (the crawl: 20,000 into segments of 1,000,000; here 10 into
    400); its segments still end up full, with at most two partial ones (the newest flush included), so a query
    visits few segments."""
    corpus = Corpus(seed=31)
    index = open_index(tmp_path / "near", flush_docs=10, max_segment_docs=400)
    most_partial = 0
    for key in range(3_000):
        index.add(key, corpus.next(), time=1)
        sizes = [segment.size for segment in index.segments]
        partial = [size for size in sizes if size < 400 - 10]
        assert len(partial) <= 2 and all(size < 2 * 400 for size in sizes), sizes
        assert sizes[:len(sizes) - len(partial)] == [size for size in sizes if size >= 390], sizes  # full ones first
        most_partial = max(most_partial, len(partial))
    assert most_partial == 2 and len(index.segments) <= len(index) // 390 + 2
