"""Candidate pairs of real texts across the whole similarity range, for labelling by hand (issue 26).

The texts are read from the shared data folder at run time (``data_dir``; none ships with the project):
the Sina texts of ``sina-news-2018``, the hand-labelled bodies (gold) of ``xmu-finance-news`` (8 finance
portals, mostly 2018-06: the same news reprinted by several portals) and of ``cwced``, the SogouCS/SogouCA
sample bodies and the ``cx-extractor-163`` texts (one tool's reading of 74 NetEase pages).  A text is named by
a *text id* ``"<folder>:<locator>"`` (see :func:`load_texts`); the label file holds only these ids, never text.

Similarity is the whole-text character 5-gram Jaccard of :func:`~newsdedup.evaluation.reprints.char_ngram_jaccard`
(NFKC, whitespace removed).  Pairs from 0.05 up are found through an inverted index over a fixed 1-in-8
sample of each text's 5-grams (a 5-gram is kept when its CRC-32 is divisible by 8, so two texts keep the same
ones): texts sharing two or more sampled 5-grams are candidates, and their exact Jaccard is then computed.
Sampled 5-grams held by more than ``max_df`` texts (page boilerplate: Sina's ad loader, a portal's footer) are
left out of the index, so the pairs that only such blocks make similar are drawn separately, at random among
the texts sharing one (:func:`boilerplate_pairs`).  Candidates are binned by Jaccard (:data:`BINS`) and each
bin is sampled with one seeded generator, so the same seed gives the same pairs.

Passage reuse (a quoted or stitched paragraph inside a different article) has a low whole-text Jaccard; the
sampler therefore also draws, from the 0.05-0.5 candidates, pairs sharing a block (:func:`shared_blocks`) of
:data:`REUSE_BLOCK` characters or more that is not page boilerplate (:func:`_is_boilerplate`).
"""

from __future__ import annotations

import gzip
import json
import random
import re
import unicodedata
import zlib
from bisect import bisect_right
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

#: Jaccard bins ``[low, high)``; the last one includes 1.0.
BINS: tuple[tuple[float, float], ...] = ((0.05, 0.1), (0.1, 0.2), (0.2, 0.35), (0.35, 0.5), (0.5, 0.7), (0.7, 0.9),
                                         (0.9, 1.0))
#: A shared block of this many characters (whitespace-free) marks a candidate of passage reuse.
REUSE_BLOCK = 80
LABELS = ("near_duplicate", "reuse", "different", "junk")
SPLITS = ("tune", "test")
N = 5  # characters per gram
SAMPLE_MOD = 8  # a 5-gram is indexed when crc32 % SAMPLE_MOD == 0

#: The labelled pairs (one JSON object a line) and their guideline, shipped with the package: ids, labels, notes.
LABEL_FILE = Path(__file__).with_name("labels") / "real_pairs.jsonl"
SINA = Path("sina-news-2018") / "articles.jsonl.gz"
SOGOU = (Path("sogou-smarty") / "SogouCS" / "news_sohusite_xml.smarty.dat",
         Path("sogou-smarty") / "SogouCA" / "news_tensite_xml.smarty.dat")
_SOGOU_DOC = re.compile(r"<doc>.*?<docno>(.*?)</docno>.*?<content>(.*?)</content>.*?</doc>", re.S)


def _read(path: Path, encoding: str = "utf-8") -> str:
    return path.read_bytes().decode(encoding, errors="replace")


def load_texts(data_dir: Path | str, *, min_chars: int = 30) -> dict[str, str]:
    """Every text of the sources, by text id, as the label offsets count them (no stripping, no normalising).

    Ids: ``sina-news-2018:<article id>``, ``xmu-finance-news:gold/<page>.txt``, ``cwced:cleaned/<uuid>.txt``,
    ``sogou-smarty:<file>#<docno>`` and ``cx-extractor-163:Text/<n>.txt`` (GBK).  Texts with fewer than
    ``min_chars`` non-space characters are left out (nothing to compare).
    """
    data = Path(data_dir)
    if not (data / SINA).is_file():
        raise ValueError(f"{data / SINA} not found: pass data_dir=the shared data folder (../shared/data)")
    texts: dict[str, str] = {}
    with gzip.open(data / SINA, "rt", encoding="utf-8") as lines:
        for line in lines:
            if line.strip():
                row = json.loads(line)
                texts[f"sina-news-2018:{row['id']}"] = row["text"]
    for folder, pattern in (("xmu-finance-news", "gold/*.txt"), ("cwced", "cleaned/*.txt")):
        for path in sorted((data / folder).glob(pattern)):
            texts[f"{folder}:{path.relative_to(data / folder).as_posix()}"] = _read(path)
    for name in SOGOU:
        if (data / name).is_file():
            for docno, content in _SOGOU_DOC.findall(_read(data / name, "gb18030")):
                texts[f"sogou-smarty:{Path(*name.parts[1:]).as_posix()}#{docno}"] = content
    for path in sorted((data / "cx-extractor-163" / "Text").glob("*.txt"), key=lambda p: int(p.stem)):
        texts[f"cx-extractor-163:Text/{path.name}"] = _read(path, "gbk")
    return {key: text for key, text in texts.items() if len("".join(text.split())) >= min_chars}


def compact(text: str) -> str:
    """What the Jaccard compares: NFKC, whitespace removed (as ``char_ngram_jaccard`` does)."""
    return "".join(unicodedata.normalize("NFKC", text).split())


def gram_hashes(text: str) -> frozenset[int]:
    """CRC-32s of the whitespace-free character 5-grams."""
    s = compact(text)
    return frozenset(zlib.crc32(s[i : i + N].encode("utf-8")) for i in range(max(1, len(s) - N + 1))) if s else frozenset()


def jaccard(a: frozenset[int], b: frozenset[int]) -> float:
    union = len(a | b)
    return len(a & b) / union if union else 0.0


def bin_of(value: float) -> str:
    """The :data:`BINS` label of a Jaccard, e.g. ``"0.2-0.35"``; ``""`` below the first bin."""
    lows = [low for low, _ in BINS]
    i = bisect_right(lows, value) - 1
    return "" if i < 0 else f"{BINS[i][0]}-{BINS[i][1]}"


@dataclass(frozen=True)
class Block:
    """A common block: ``length`` characters at ``a`` in one text and ``b`` in the other (raw offsets)."""

    a: int
    b: int
    length: int  # whitespace-free characters


def _compact_with_offsets(text: str) -> tuple[str, list[int]]:
    chars, offsets = [], []
    for i, ch in enumerate(text):
        for c in unicodedata.normalize("NFKC", ch):
            if not c.isspace():
                chars.append(c)
                offsets.append(i)
    return "".join(chars), offsets


def shared_blocks(a: str, b: str, *, min_len: int = 20) -> list[tuple[int, int, int, int, int]]:
    """Maximal common blocks of ``min_len``+ whitespace-free characters, greedily left to right in ``a``:
    ``(start_a, end_a, start_b, end_b, length)`` with raw character offsets (end exclusive)."""
    ca, oa = _compact_with_offsets(a)
    cb, ob = _compact_with_offsets(b)
    where: dict[str, list[int]] = defaultdict(list)
    for j in range(len(cb) - N + 1):
        where[cb[j : j + N]].append(j)
    blocks, i = [], 0
    while i <= len(ca) - N:
        best, best_j = 0, -1
        for j in where.get(ca[i : i + N], ())[:8]:
            k = N
            while i + k < len(ca) and j + k < len(cb) and ca[i + k] == cb[j + k]:
                k += 1
            if k > best:
                best, best_j = k, j
        if best >= min_len:
            blocks.append((oa[i], oa[i + best - 1] + 1, ob[best_j], ob[best_j + best - 1] + 1, best))
            i += best
        else:
            i += 1
    return blocks


def candidate_pairs(texts: Mapping[str, str], *, max_df: int = 40) -> dict[tuple[str, str], float]:
    """Pairs of distinct texts with Jaccard >= the first bin's low end, found through the sampled 5-gram index;
    byte-identical whitespace-free texts are folded to their first id first (one representative each)."""
    first_of: dict[str, str] = {}
    for key in sorted(texts):
        first_of.setdefault(compact(texts[key]), key)
    keys = sorted(first_of.values())
    grams = [gram_hashes(texts[k]) for k in keys]
    postings: dict[int, list[int]] = defaultdict(list)
    for i, g in enumerate(grams):
        for h in g:
            if h % SAMPLE_MOD == 0:
                postings[h].append(i)
    shared: Counter[tuple[int, int]] = Counter()
    for docs in postings.values():
        if 2 <= len(docs) <= max_df:
            for x in range(len(docs)):
                for y in range(x + 1, len(docs)):
                    shared[docs[x], docs[y]] += 1
    low = BINS[0][0]
    pairs = {}
    for (x, y), n in shared.items():
        if n >= 2:
            value = jaccard(grams[x], grams[y])
            if value >= low:
                pairs[keys[x], keys[y]] = round(value, 4)
    return pairs


def boilerplate_pairs(texts: Mapping[str, str], rng: random.Random, count: int, *, min_df: int = 41
                      ) -> dict[tuple[str, str], float]:
    """``count`` random pairs (Jaccard >= 0.05) among texts sharing a sampled 5-gram too common to index: the
    pairs page boilerplate alone can make similar, which :func:`candidate_pairs` does not look at."""
    keys = sorted({compact(t): k for k, t in sorted(texts.items(), reverse=True)}.values())
    holders: dict[int, list[str]] = defaultdict(list)
    for k in keys:
        for h in gram_hashes(texts[k]):
            if h % SAMPLE_MOD == 0:
                holders[h].append(k)
    common = sorted(h for h, docs in holders.items() if len(docs) >= min_df)
    pairs: dict[tuple[str, str], float] = {}
    for _ in range(count * 20):
        if len(pairs) >= count or not common:
            break
        a, b = sorted(rng.sample(holders[rng.choice(common)], 2))
        value = jaccard(gram_hashes(texts[a]), gram_hashes(texts[b]))
        if value >= BINS[0][0]:
            pairs[a, b] = round(value, 4)
    return pairs


_CJK = re.compile(r"[\u4e00-\u9fff]")


def _is_boilerplate(block: str, corpus: str, *, max_texts: int = 3) -> bool:
    """A block that is mostly not Chinese prose (script, CSS, a URL list) or whose middle 16 characters occur in
    more than ``max_texts`` texts of the corpus (a promo line, a footer, a mandated form text)."""
    if len(_CJK.findall(block)) < 0.4 * len(block):
        return True
    middle = block[len(block) // 2 - 8 : len(block) // 2 + 8]
    return corpus.count(middle) > max_texts


def passages(a: str, b: str, corpus: str, *, max_gap: int = 40, min_len: int = 20, max_texts: int = 20) -> list[dict]:
    """The text ``a`` and ``b`` share, as passages ``{"a": [start, end], "b": [start, end], "chars": n}`` (raw
    offsets, end exclusive): common blocks of ``min_len``+ characters that are not boilerplate (in more than
    ``max_texts`` texts: a portal's footer or disclaimer, not a reused lead), merged while they
    follow each other in both texts with at most ``max_gap`` characters between (a quote with a word changed
    stays one passage).  Approximate by design: the label file records where the reused text lies."""
    blocks = [blk for blk in shared_blocks(a, b, min_len=min_len) 
              if not _is_boilerplate(compact(a[blk[0]:blk[1]]), corpus, max_texts=max_texts)]
    merged: list[list[int]] = []
    for start_a, end_a, start_b, end_b, length in sorted(blocks):
        last = merged[-1] if merged else None
        if last and 0 <= start_a - last[1] <= max_gap and 0 <= start_b - last[3] <= max_gap:
            last[1], last[3], last[4] = end_a, end_b, last[4] + length
        else:
            merged.append([start_a, end_a, start_b, end_b, length])
    return [{"a": [m[0], m[1]], "b": [m[2], m[3]], "chars": m[4]} for m in merged]


def pair_id(a: str, b: str) -> str:
    """One string for a pair (text ids hold no line break; Sina file names may hold ``|``)."""
    return f"{a}\n{b}"


def split_pairs(pairs: Sequence[Mapping], *, seed: int = 26) -> dict[str, str]:
    """``pair id -> "tune" | "test"``: within each bin the pairs ordered by a seeded CRC-32 of their id take
    the two halves alternately, so every bin is split half and half (an odd bin gives ``tune`` the extra one)."""
    by_bin: dict[str, list[str]] = defaultdict(list)
    for pair in pairs:
        by_bin[bin_of(pair["jaccard"])].append(pair_id(pair["a"], pair["b"]))
    split = {}
    for ids in by_bin.values():
        for n, key in enumerate(sorted(ids, key=lambda k: (zlib.crc32(f"{seed}:{k}".encode()), k))):
            split[key] = SPLITS[n % 2]
    return split


def draw_pairs(data_dir: Path | str, *, seed: int = 26, per_bin: int = 45, reuse: int = 60, boilerplate: int = 25,
               exclude: Iterable[tuple[str, str]] = (), texts: Mapping[str, str] | None = None,
               found: Mapping[tuple[str, str], float] | None = None) -> list[dict]:
    """Candidate pairs to label: ``per_bin`` of each bin (all there are when fewer; a third of them holding a
    portal page's body where there are so many), ``reuse`` more whose longest
    common block has :data:`REUSE_BLOCK`+ characters and Jaccard under 0.5, and ``boilerplate`` pairs made
    similar by common page blocks; ``exclude`` (pairs already labelled) is skipped, so the same call with the
    labelled pairs excluded draws fresh ones (``found``: :func:`candidate_pairs` of ``texts``, when already
    computed).  Rows ``{"a", "b", "jaccard", "bin", "longest_block", "drawn_as"}``.
    """
    texts = texts if texts is not None else load_texts(data_dir)
    rng = random.Random(seed)
    found = dict(found if found is not None else candidate_pairs(texts))
    skip = {tuple(sorted(p)) for p in exclude}
    by_bin: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for pair in sorted(found):
        if pair not in skip:
            by_bin[bin_of(found[pair])].append(pair)
    chosen: dict[tuple[str, str], str] = {}
    for low, high in BINS:
        # A third of each bin from pairs holding a portal page's body (they are few: Sina fills the rest).
        pool = by_bin[f"{low}-{high}"]
        portal = [p for p in pool if not (p[0].startswith("sina-news-2018:") and p[1].startswith("sina-news-2018:"))]
        picked = rng.sample(portal, min(per_bin // 3, len(portal)))
        rest = [p for p in pool if p not in set(picked)]
        for pair in picked + rng.sample(rest, min(per_bin - len(picked), len(rest))):
            chosen[pair] = "bin"
    low_pool = [p for p in sorted(found) if found[p] < 0.5 and p not in chosen and p not in skip]
    rng.shuffle(low_pool)
    corpus = "\x00".join(compact(t) for t in texts.values())
    reused = 0
    for pair in low_pool:
        if reused >= reuse:
            break
        a = texts[pair[0]]
        if any(not _is_boilerplate(compact(a[start:end]), corpus)
               for start, end, *_ in shared_blocks(a, texts[pair[1]], min_len=REUSE_BLOCK)):
            chosen[pair] = "long_block"
            reused += 1
    for pair, value in boilerplate_pairs(texts, rng, boilerplate).items():
        if pair not in chosen and pair not in skip:
            found[pair] = value
            chosen[pair] = "boilerplate"
    rows = []
    for (a, b), how in chosen.items():
        blocks = shared_blocks(texts[a], texts[b])
        rows.append({"a": a, "b": b, "jaccard": found[a, b], "bin": bin_of(found[a, b]),
                     "longest_block": max((blk[4] for blk in blocks), default=0), "drawn_as": how})
    rows.sort(key=lambda r: (zlib.crc32(f"{seed}:{r['a']}|{r['b']}".encode()), r["a"], r["b"]))
    return rows


def load_labels(path: Path | str = LABEL_FILE) -> list[dict]:
    """The labelled pairs, checked: every line has the text ids, a Jaccard in its bin, a label of :data:`LABELS`,
    a split of :data:`SPLITS` and a note, reuse pairs their passages; no pair twice.  A bad line is a
    ``ValueError`` naming it."""
    rows, seen = [], set()
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        row = json.loads(line)
        where = f"{path}:{number}"
        missing = {"a", "b", "jaccard", "bin", "split", "label", "note"} - row.keys()
        if missing:
            raise ValueError(f"{where}: missing {sorted(missing)}")
        if row["label"] not in LABELS or row["split"] not in SPLITS:
            raise ValueError(f"{where}: label {row['label']!r} / split {row['split']!r} not in {LABELS} / {SPLITS}")
        if not row["a"] < row["b"] or (row["a"], row["b"]) in seen:
            raise ValueError(f"{where}: a pair is written once, its ids in order (a < b)")
        if bin_of(row["jaccard"]) != row["bin"]:
            raise ValueError(f"{where}: Jaccard {row['jaccard']} is not in bin {row['bin']}")
        if row["label"] == "reuse" and not row.get("passages"):
            raise ValueError(f"{where}: a reuse pair names its passages")
        seen.add((row["a"], row["b"]))
        rows.append(row)
    return rows
