"""SpotSigs: spot signatures, multiset Jaccard, antecedent lists and length partitions.

SpotSigs (Theobald, Siddharth, Paepcke, SIGIR 2008; for Chinese news: Li, Xu, Wu, Gan 2017) describes a
page by short word chains that follow *antecedents*, stopwords that are frequent in running text and rare
in navigation bars and ads. Boilerplate therefore contributes few spots and the article body most of them.

The functions here are pure and take token lists (segmentation happens elsewhere); the inverted index
that finds every stored document within a Jaccard threshold lives in :mod:`newsdedup.dedup.spotsigs_index`.

The paper's example 1 (antecedents {and, in, out, was, to, at}, distance 1, chain length 2):

>>> text = ("The unified loan and return system in Chengdu was rolled out in 2014 and gives local residents "
...         "free access to all public library resources at all branches")
>>> sorted(spot_signatures(text.split(), {"and", "in", "out", "was", "to", "at"}, chain_length=2))
... # doctest: +NORMALIZE_WHITESPACE
['and:gives:local', 'and:return:system', 'at:all:branches', 'in:2014:gives', 'in:Chengdu:rolled',
 'out:2014:gives', 'to:all:public', 'was:rolled:2014']
>>> multiset_jaccard(Counter({"a": 2, "b": 1}), Counter({"a": 1, "c": 1}))
0.25
>>> length_partitions(0.5, 261)
[(1, 3), (4, 9), (10, 21), (22, 45), (46, 93), (94, 189), (190, None)]
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Hashable, Mapping, Sequence
from fractions import Fraction
from importlib import resources
from math import floor
from pathlib import Path

from newsdedup.text.normalize import find_letter_or_number, is_word  # is_word re-exported: part of the SpotSigs API

__all__ = [
    "ANTECEDENT_LISTS",
    "WHOLE_CONTAINMENT",
    "containment_match",
    "is_word",
    "length_partitions",
    "load_antecedents",
    "multiset_jaccard",
    "read_word_list",
    "spot_signatures",
]

#: Packaged antecedent lists; "optimized" is used together with "basic", as the paper does.
ANTECEDENT_LISTS: dict[str, tuple[str, ...]] = {"basic": ("basic",), "optimized": ("basic", "optimized")}


def spot_signatures(
    tokens: Sequence[str],
    antecedents: Collection[str],
    *,
    chain_length: int = 1,
    distance: int = 1,
) -> Counter[str]:
    """Return the multiset of spot signatures ``"a:t1:...:tn"`` of a token sequence.

    At each antecedent ``a`` the chain starts at the first following token that is not an antecedent and
    then takes every ``distance``-th non-antecedent token until it holds ``chain_length`` of them
    (``distance=1``: consecutive non-antecedents, as in the paper's example 1). Antecedents never enter a
    chain, but each one starts its own. A chain that runs off the end of the text is dropped. Tokens with
    no letter or digit (punctuation, spaces) are ignored as if absent. A repeated spot counts repeatedly:
    the document is a multiset.
    """
    if isinstance(tokens, str):
        raise ValueError("tokens must be a sequence of words, not one string: segment the text first")
    if not isinstance(chain_length, int) or chain_length < 1:
        raise ValueError(f"chain_length must be an integer >= 1 (the paper uses 1 for Chinese), got {chain_length!r}")
    if not isinstance(distance, int) or distance < 1:
        raise ValueError(f"distance must be an integer >= 1 (the paper uses 1), got {distance!r}")
    if not isinstance(antecedents, (set, frozenset, dict)):
        antecedents = frozenset(antecedents)

    # One pass splits the text into the non-antecedent words (chain material) and, for every
    # antecedent, the index in that list where its chain starts.
    words: list[str] = []
    starts: list[tuple[str, int]] = []
    for token in filter(find_letter_or_number, tokens):
        if token in antecedents:
            starts.append((token, len(words)))
        else:
            words.append(token)

    span = (chain_length - 1) * distance
    last_start = len(words) - 1 - span
    spots: Counter[str] = Counter()
    for antecedent, start in starts:
        if start > last_start:
            continue  # the chain would run off the end of the text
        if chain_length == 1:
            spots[f"{antecedent}:{words[start]}"] += 1
        else:
            chain = words[start : start + span + 1 : distance]
            spots[antecedent + ":" + ":".join(chain)] += 1
    return spots


def multiset_jaccard(a: Mapping[Hashable, int], b: Mapping[Hashable, int]) -> float:
    """Multiset Jaccard similarity: sum of min counts / sum of max counts.

    Non-positive counts are ignored (as ``+counter`` would drop them); two empty multisets give 0.0.

    >>> multiset_jaccard(Counter("aab"), Counter("ab"))
    0.6666666666666666
    >>> multiset_jaccard(Counter(), Counter())
    0.0
    """
    size_a = sum(c for c in a.values() if c > 0)
    size_b = sum(c for c in b.values() if c > 0)
    if len(a) > len(b):
        a, b = b, a
    overlap = 0
    get = b.get
    for key, count in a.items():
        other = get(key)
        if other is not None and count > 0 and other > 0:
            overlap += count if count < other else other
    union = size_a + size_b - overlap  # sum of max counts
    return overlap / union if union else 0.0


#: What "wholly contained" means for :func:`containment_match`: all of the smaller text's spots but one in a
#: hundred are in the larger (a verbatim abridgement keeps every spot but the one its cut breaks: the synthetic
#: first-third versions measure 1.0 against their original, less against an edited copy of it).
WHOLE_CONTAINMENT = 0.99


def shared_of_longer(jaccard: float, containment: float) -> float:
    """The share of the longer text's spots that the two texts have in common, from their multiset Jaccard
    ``common / (smaller + larger - common)`` and containment ``common / smaller``: ``1 / (1/J + 1 - 1/C)``. Under
    0.5, the longer text's own spots outweigh the shared ones.

    >>> shared_of_longer(0.25, 1.0)  # a quarter as long, wholly inside the other
    0.25
    >>> round(shared_of_longer(8 / 14, 0.8), 4)  # 8 of 10 spots in a text of 12: 8 / 12
    0.6667
    >>> shared_of_longer(0.0, 0.9)
    0.0
    """
    if jaccard <= 0.0 or containment <= 0.0:
        return 0.0
    return 1.0 / (1.0 / jaccard + 1.0 - 1.0 / containment)


def containment_match(common: int, query_length: int, stored_length: int, *, min_containment: float,
                      min_spots: int = 1, min_ratio: float = 0.15, whole_below: float | None = None) -> float | None:
    """The containment fallback's decision for one pair: its containment when it matches, else None.

    ``common`` is the multiset overlap of two documents of ``query_length`` and ``stored_length`` spot
    occurrences. The containment ``common / smaller`` must be ``>= min_containment``, the smaller length
    ``>= min_spots`` and the length ratio (smaller / larger) ``>= min_ratio``. With ``whole_below``, a pair whose
    length ratio is under it also needs the smaller text wholly contained (``>= WHOLE_CONTAINMENT``): an
    abridged copy (the first part of the article kept) is verbatim, while a different article that reuses most
    of a shorter one (a commentary quoting it, a page stitched from it and another report, a follow-up
    repeating it) rewrites, cuts or splices some of it. Both indexes (:mod:`newsdedup.dedup.spotsigs_index`,
    :mod:`newsdedup.dedup.spotsigs_disk`) decide through this function, in this float arithmetic.

    >>> containment_match(19, 20, 60, min_containment=0.8)  # a third as long, 95% of it in the other
    0.95
    >>> containment_match(19, 20, 60, min_containment=0.8, whole_below=0.6) is None
    True
    >>> containment_match(20, 20, 60, min_containment=0.8, whole_below=0.6)
    1.0
    >>> containment_match(17, 20, 25, min_containment=0.8, whole_below=0.6)  # ratio 0.8: 0.8 is enough
    0.85
    """
    smaller, larger = (query_length, stored_length) if query_length <= stored_length else (stored_length, query_length)
    if smaller < min_spots or smaller <= 0 or smaller / larger < min_ratio:
        return None
    containment = common / smaller
    if containment < min_containment:
        return None
    if whole_below is not None and smaller / larger < whole_below and containment < WHOLE_CONTAINMENT:
        return None
    return containment


def read_word_list(path: str | Path) -> list[str]:
    """Read a one-word-per-line list (UTF-8; ``#`` starts a comment, blank lines are skipped)."""
    words: list[str] = []
    with open(path, encoding="utf-8-sig") as handle:
        for line in handle:
            word = line.split("#", 1)[0].strip()
            if word:
                words.append(word)
    return words


def load_antecedents(name_or_path: str | Path = "optimized") -> frozenset[str]:
    """Load an antecedent set: a packaged list by name or a word-list file by path.

    ``"basic"`` is the short list of very frequent body-text stopwords (的, 在, 了, 是, ...);
    ``"optimized"`` is basic plus the stopwords that occur almost only in body text, as the paper
    combines them (211 antecedents there). Files hold one word per line, ``#`` comments allowed.
    """
    name = str(name_or_path)
    if name in ANTECEDENT_LISTS:
        folder = resources.files("newsdedup.config") / "antecedents"
        words: set[str] = set()
        for part in ANTECEDENT_LISTS[name]:
            resource = folder / f"{part}.txt"
            if not resource.is_file():
                raise ValueError(
                    f"packaged antecedent list {part}.txt is missing from newsdedup.config: reinstall newsdedup "
                    "or generate it with `newsdedup antecedents`"
                )
            with resources.as_file(resource) as path:
                words.update(read_word_list(path))
    else:
        path = Path(name).expanduser()
        if not path.is_file():
            raise ValueError(
                f"antecedents {name!r} is neither a packaged list ({', '.join(ANTECEDENT_LISTS)}) nor an existing "
                "file: pass one of those names or the path of a one-word-per-line file"
            )
        words = set(read_word_list(path))
    if not words:
        raise ValueError(f"antecedent list {name!r} is empty: give a file with at least one word per line")
    return frozenset(words)


def length_partitions(tau: float, max_length: int) -> list[tuple[int, int | None]]:
    """Split document lengths 1.. into the paper's partitions for threshold ``tau``.

    A partition starting at ``p`` ends at ``floor(p / tau) + 1`` (inclusive); the next starts right after.
    The partition that reaches ``max_length`` is left open (end ``None``). Two documents whose lengths
    differ by a ratio under ``tau`` can never reach ``tau``, so every match of a document lies in its own
    partition or a neighbouring one. ``tau`` is read as the decimal it is written as (0.6 is 3/5), so
    boundaries do not depend on binary rounding.

    >>> length_partitions(0.6, 261)  # doctest: +NORMALIZE_WHITESPACE
    [(1, 2), (3, 6), (7, 12), (13, 22), (23, 39), (40, 67), (68, 114), (115, 192), (193, None)]
    """
    if isinstance(tau, bool) or not isinstance(tau, (int, float, Fraction)) or not 0 < tau <= 1:
        raise ValueError(f"tau must be a similarity threshold with 0 < tau <= 1, got {tau!r}")
    if isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 1:
        raise ValueError(f"max_length must be an integer >= 1 (the longest expected document), got {max_length!r}")
    exact_tau = tau if isinstance(tau, Fraction) else Fraction(repr(float(tau)))
    partitions: list[tuple[int, int | None]] = []
    start = 1
    while True:
        end = floor(start / exact_tau) + 1
        if end >= max_length:
            partitions.append((start, None))
            return partitions
        partitions.append((start, end))
        start = end + 1
