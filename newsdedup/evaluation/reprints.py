"""A seeded reprint benchmark built from real news texts, in two disjoint halves: one to tune on, one to report.

The protocols come from the papers in ``../shared/papers``: the semantic-fingerprint Simhash paper adds or
deletes 1-20% of a text at random positions and moves sentences; E-Simhash modifies, deletes, moves and
replaces up to 20%; the issue adds source/editor lines and a short version (first third).  Benchmark edits
work on *sentence units* (:func:`split_units`), so a reprint's ``edit_ratio`` is exact
(:func:`sentence_edit_ratio` recomputes it from the two texts); the papers' experiments edit characters
(:class:`Editor`'s ``*_chars`` methods), so that 1% means 1%.

Documents are dicts ``{"id", "text", "title", "story", "kind", "edit_ratio", "origin"}``; ``story`` is the
gold (copies of one article share it).  Kinds: ``original``, the :data:`REPRINT_KINDS`, ``singleton`` and the
hard :data:`NEGATIVE_KINDS`, each a story of its own: ``disclaimer`` (different articles ending in one long
portal disclaimer), ``same_topic`` (``sohu2021-samples`` same-topic pairs that are no textual copies),
``junk`` (JavaScript/CSS-only texts) and, in the held-out half only, ``other_corpus`` (texts of another
corpus and decade, the Sogou samples, that the tuning never saw).

The Sina corpus holds natural duplicates, so its pool is cleaned first: sentence units found in 3+ texts
(boilerplate, stock leads) are removed, texts sharing a remaining sentence of 20+ characters are grouped and
one text per group is kept.  The pool is then cut in two by a hash of each article's id (``split``): the
defaults are tuned on ``"tune"`` and every reported figure comes from ``"test"``, so no article, donor
sentence or same-topic pair is in both.  The data are read at run time from ``data_dir``; none ships.
"""

from __future__ import annotations

import gzip
import json
import random
import re
import unicodedata
import zlib
from bisect import bisect_left
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

SINA_ARTICLES = Path("sina-news-2018") / "articles.jsonl.gz"
SOHU_PAIRS = Path("sohu2021-samples") / "data" / "raw" / "samples.txt"
SOGOU_FILES = (Path("sogou-smarty") / "SogouCS" / "news_sohusite_xml.smarty.dat",
               Path("sogou-smarty") / "SogouCA" / "news_tensite_xml.smarty.dat")
SPLITS = ("test", "tune")

#: ``add``/``delete``/``replace``/``reorder``: 1-30% of the sentence units added (other articles'),
#: deleted, replaced or moved; ``source``: a source/editor line; ``short``: the first third of a long
#: article; ``format``: whitespace and line breaks only; ``mixed``: a source line plus units added or replaced.
REPRINT_KINDS = ("add", "delete", "replace", "reorder", "source", "short", "format", "mixed")
NEGATIVE_KINDS = ("disclaimer", "same_topic", "junk", "other_corpus")

#: A made-up portal disclaimer (about 330 characters), appended to the ``disclaimer`` negatives.
DISCLAIMER = (
    "免责声明：本网站所刊载的文章、图片及音视频资料，除注明原创者外，均转载自其他媒体或由网友上传，"
    "转载目的在于传递更多信息，并不代表本网赞同其观点或对其真实性负责。"
    "如有作品内容、版权或其他问题，请在作品发表之日起三十日内与本网联系，本网将在核实后第一时间删除相关内容。"
    "凡本网注明“来源：本网”的所有作品，版权均属本网所有，未经书面授权，任何单位和个人不得转载、摘编或以其他方式使用；"
    "已经授权的，应在授权范围内使用，并注明出处，违者本网将依法追究其法律责任。"
    "本网对用户发布的评论内容不承担任何责任，评论仅代表网友个人观点。"
    "投资有风险，入市需谨慎，文中内容仅供参考，不构成任何投资建议，读者据此操作，风险自担。"
    "联系邮箱及举报电话请见本网底部“联系我们”页面，本网保留对本声明的最终解释权。"
)
_OUTLETS = ("新华网", "人民网", "中国新闻网", "央视新闻客户端", "澎湃新闻", "环球网", "光明网", "中国青年网", "北京青年报",
            "南方都市报", "新京报", "界面新闻", "每日经济新闻", "钱江晚报", "扬子晚报", "华商报", "齐鲁晚报", "红星新闻")
_SURNAMES = "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘蒋蔡余杜叶程苏魏吕丁任沈姚卢"
_GIVEN = "伟芳娜敏静丽强磊军洋勇艳杰娟涛明超秀霞平刚桂英华玉萍红娥玲芬燕彬鹏辉宇浩凯晨欣怡婷雪琳晓文博"
_SOURCE_TEMPLATES = ("来源：{outlet} 责任编辑：{editor}", "（来源：{outlet}）", "责任编辑：{editor}",
                     "本文来源：{outlet}，作者：{author}，责任编辑：{editor}", "（原标题：{title}）来源：{outlet}",
                     "文章来源：{outlet}　编辑：{editor}")
_TITLE_AFFIXES = ("", "", "（转载）", "｜{outlet}", "【{outlet}】", "转：", "原创：")
_JUNK_TEMPLATES = (  # script-only pages that differ in ids only, as scraped slide-show pages do
    "var ua = navigator.userAgent.toLowerCase();\nif(/\\(iPad/i.test(ua)){{\n  location.replace("
    "'http://slide.example.com.cn/play.php?sid={sid}&id={id}&ch={ch}'+location.hash);\n}}\n"
    "a:link{{color:#333;text-decoration:none;}}\nbody{{font:12px/20px \"Microsoft Yahei\",sans-serif;}}\n",
    "(function(){{\n  var s = document.createElement('script');\n  s.src = '//ad.example.com.cn/loader/{sid}/"
    "left_{id}.js';\n  document.getElementsByTagName('head')[0].appendChild(s);\n}})();\n"
    "window.PAGE_CONFIG = {{ channel: '{ch}', docid: '{id}', comment: true }};\n",
    "PageWidget.load({{ trigger: {{ id: 'videoList{ch}' }}, require: [{{ url: '//static.example.com.cn/page/"
    "video{sid}.js' }}],\n  onAfterModuleLoad: function () {{ new VideoPlayer({{ video_id: {id} }}); }} }});\n",
)

# A unit ends after a run of sentence terminators (plus closing quotes/brackets) or a line break, with the
# whitespace that follows.
_BOUNDARY = re.compile(r"(?:[。！？!?；;]+[”’\"」』）)\]】]*|\n)\s*")
_ENDS_AT_BOUNDARY = re.compile(r"(?:[。！？!?；;]+[”’\"」』）)\]】]*|\n)\s*$")
_WORD_CHAR = re.compile(r"[^\W_]")
_NOT_CJK = re.compile(r"[^\u4e00-\u9fff]+")
# Substrings that only script, CSS, URLs or mis-decoded bytes put into a scraped text.
_SCRIPT_MARKERS = ("function", "var ", "{", "}", "\ufffd", "document.", "window.", "http", "//")


def split_units(text: str) -> list[str]:
    """Split ``text`` into sentence units whose concatenation is ``text``; every unit carries wording.

    >>> split_units("第一句。“第二句！”\\n第三句")
    ['第一句。', '“第二句！”\\n', '第三句']
    """
    bounds = sorted({0, len(text), *(match.end() for match in _BOUNDARY.finditer(text))})
    pieces = [text[a:b] for a, b in zip(bounds, bounds[1:])]
    units: list[str] = []
    pending = ""  # leading pieces without wording are glued to the first unit, later ones to the previous
    for piece in pieces:
        if _WORD_CHAR.search(piece):
            units.append(pending + piece)
            pending = ""
        elif units:
            units[-1] += piece
        else:
            pending += piece
    if pending:
        units = [*units[:-1], units[-1] + pending] if units else [pending]
    return units


def unit_key(unit: str) -> str:
    """What two units must share to be the same sentence: the unit without whitespace."""
    return "".join(unit.split())


def join_units(units: Sequence[str]) -> str:
    """Concatenate units, with a line break where one would run into the next (so they split back alike)."""
    return "".join(u if i == len(units) - 1 or _ENDS_AT_BOUNDARY.search(u) else u + "\n" for i, u in enumerate(units))


def _longest_increasing(values: Sequence[int]) -> int:
    tails: list[int] = []
    for value in values:
        i = bisect_left(tails, value)
        tails[i : i + 1] = [value]
    return len(tails)


def sentence_edit_ratio(original: str, reprint: str) -> float:
    """Share of ``original``'s units added, deleted, replaced (``max(added, deleted) / n``) or, when the
    unit multisets are equal, moved (units outside the longest in-order run).

    >>> sentence_edit_ratio("甲。乙。丙。丁。", "甲。乙。丙。丁。戊。"), sentence_edit_ratio("甲。乙。丙。丁。", "乙。丙。丁。甲。")
    (0.25, 0.25)
    """
    if not _WORD_CHAR.search(original):
        raise ValueError("the original text has no wording (no letter or digit): pass an article text")
    before = [unit_key(u) for u in split_units(original)]
    after = [unit_key(u) for u in split_units(reprint)]
    added, deleted = Counter(after) - Counter(before), Counter(before) - Counter(after)
    if added or deleted:
        return max(added.total(), deleted.total()) / len(before)
    positions: dict[str, list[int]] = {}
    for i, key in enumerate(before):
        positions.setdefault(key, []).append(i)
    order = [positions[key].pop(0) for key in after]
    return (len(order) - _longest_increasing(order)) / len(before)


def _char_ngrams(text: str, n: int = 5) -> set[str]:
    text = "".join(unicodedata.normalize("NFKC", text).split())
    return {text[i : i + n] for i in range(max(1, len(text) - n + 1))} if text else set()


def char_ngram_jaccard(a: str, b: str, n: int = 5) -> float:
    """Jaccard of the whitespace-free character n-gram sets: how much two texts are copies of each other."""
    grams_a, grams_b = _char_ngrams(a, n), _char_ngrams(b, n)
    return len(grams_a & grams_b) / len(grams_a | grams_b) if grams_a | grams_b else 0.0


def _in_split(key: str, split: str) -> bool:
    return zlib.crc32(key.encode("utf-8")) % 2 == SPLITS.index(split)


# --------------------------------------------------------------------------------- the corpus


@dataclass(frozen=True)
class Article:
    """A cleaned corpus article: an original, singleton, negative or donor."""

    origin: str
    title: str
    units: tuple[str, ...]

    @property
    def text(self) -> str:
        return join_units(self.units)


def _has_script(text: str) -> bool:
    return any(marker in text for marker in _SCRIPT_MARKERS)


def _cjk(text: str) -> int:
    return len(_NOT_CJK.sub("", text))


def _clean_pool(articles: Sequence[dict], *, min_chars: int = 300, max_chars: int = 6000,
                min_units: int = 6) -> list[Article]:
    """One clean text per natural duplicate group, boilerplate sentences removed (see the module doc)."""
    split = [split_units(a["text"].strip()) for a in articles]
    seen_in = Counter(k for units in split for k in {unit_key(u) for u in units} if len(k) >= 10)
    candidates = []
    for article, units in zip(articles, split):
        if _has_script(article["text"]) or len(article["text"]) < min_chars:
            continue
        clean = join_units([u for u in units if seen_in[unit_key(u)] < 3]).strip()
        kept = split_units(clean)
        if min_chars <= len(clean) <= max_chars and _cjk(clean) >= 0.5 * len(clean) and len(kept) >= min_units:
            candidates.append(Article(article["id"], article.get("title") or "", tuple(kept)))
    group: dict[str, int] = {}  # a sentence of 20+ characters -> the first candidate holding it
    parent = list(range(len(candidates)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = i = parent[parent[i]]
        return i

    for i, article in enumerate(candidates):
        for key in map(unit_key, article.units):
            if len(key) >= 20:
                parent[root(i)] = root(group.setdefault(key, i))
    firsts: dict[int, Article] = {}
    for i, article in enumerate(candidates):
        firsts.setdefault(root(i), article)
    return list(firsts.values())


@lru_cache(maxsize=1)
def _corpus(data_dir: str) -> tuple[tuple[dict, ...], tuple[Article, ...]]:
    """The Sina texts and their cleaned pool, read once per process (a few seconds)."""
    path = Path(data_dir) / SINA_ARTICLES
    if not path.is_file():
        raise ValueError(f"{path} not found: pass data_dir=the shared data folder (../shared/data)")
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        articles = tuple(json.loads(line) for line in handle if line.strip())
    return articles, tuple(_clean_pool(articles))


def _far_apart(groups: Iterable[tuple[str, ...]], limit: int) -> list[str]:
    """Texts of whole groups, up to ``limit``, each under 0.2 character 5-gram Jaccard from every text kept:
    no two are textual copies (one sohu text recurs across pairs; Sogou holds identical pages)."""
    kept: list[str] = []
    kept_grams: list[set[str]] = []
    postings: dict[str, list[int]] = {}
    for group in groups:
        if len(kept) + len(group) > limit:
            break
        grams = [_char_ngrams(text) for text in group]
        shared = [Counter(i for gram in g for i in postings.get(gram, ())) for g in grams]
        if any(n / len(g | kept_grams[i]) >= 0.2 for g, counts in zip(grams, shared) for i, n in counts.items()):
            continue
        for text, g in zip(group, grams):
            for gram in g:
                postings.setdefault(gram, []).append(len(kept))
            kept.append(text)
            kept_grams.append(g)
    return kept


def _same_topic_texts(data_dir: Path, pairs: int, split: str, rng: random.Random) -> list[str]:
    """Texts of same-topic sohu pairs (label A) that are no textual copies of each other."""
    path = data_dir / SOHU_PAIRS
    if not path.is_file():
        raise ValueError(f"{path} not found: pass data_dir=the shared data folder, or same_topic_pairs=0")
    chosen = []
    for row in map(json.loads, filter(str.strip, path.read_text(encoding="utf-8").splitlines())):
        a, b = row["source"].strip(), row["target"].strip()
        if str(row.get("labelA")) == "1" and min(len(a), len(b)) >= 30 and _in_split(a + b, split):
            if char_ngram_jaccard(a, b) < 0.2:
                chosen.append((a, b))
    rng.shuffle(chosen)
    return _far_apart(chosen, 2 * pairs)


def _sogou_texts(data_dir: Path, count: int, rng: random.Random) -> list[str]:
    """Texts of the Sogou news samples (GB18030 pseudo-XML): another corpus, portal mix and year (2012)."""
    texts = []
    for name in SOGOU_FILES:
        raw = (data_dir / name).read_bytes().decode("gb18030", errors="replace")
        texts += [t.strip() for t in re.findall(r"<content>(.*?)</content>", raw, re.S) if len(t.strip()) >= 200]
    rng.shuffle(texts)
    return _far_apart(((t,) for t in texts), count)


# --------------------------------------------------------------------------------- edits


class Editor:
    """The reprint operations, on sentence units (the benchmark) or on characters (the papers' experiments),
    with one seeded generator and one pool of donor sentences (other articles' text)."""

    #: Word-sized overwrites of the E-Simhash mix ("modify"), in characters.
    MODIFY_CHARS = (2, 6)

    def __init__(self, rng: random.Random, donors: Sequence[str], *, min_ratio: float = 0.01,
                 max_ratio: float = 0.30) -> None:
        self.rng, self.donors = rng, [d for d in donors if d]
        if not self.donors:
            raise ValueError("donors must hold at least one non-empty sentence (text to add)")
        self.min_ratio, self.max_ratio = min_ratio, max_ratio

    def _count(self, n: int) -> int:
        """How many of ``n`` units to edit: a ratio drawn in [min_ratio, max_ratio], never above max_ratio."""
        k = max(1, round(self.rng.uniform(self.min_ratio, self.max_ratio) * n))
        while k > 1 and k / n > self.max_ratio:
            k -= 1
        return k

    def add(self, units: list[str]) -> list[str]:
        out = list(units)
        for _ in range(self._count(len(units))):
            out.insert(self.rng.randint(0, len(out)), self.rng.choice(self.donors))
        return out

    def delete(self, units: list[str]) -> list[str]:
        drop = set(self.rng.sample(range(len(units)), self._count(len(units))))
        return [u for i, u in enumerate(units) if i not in drop]

    def replace(self, units: list[str]) -> list[str]:
        out = list(units)
        for i in self.rng.sample(range(len(units)), self._count(len(units))):
            out[i] = self.rng.choice(self.donors)
        return out

    def reorder(self, units: list[str], moved: int | None = None) -> list[str]:
        """Cut ``moved`` units (default: the edit ratio's count) and reinsert each at a random position."""
        if len(units) < 2:
            raise ValueError("reordering needs a text of at least two sentences")
        k = moved or self._count(len(units))
        for _ in range(20):  # a moved unit can land where it was: retry until the order changed
            order = list(range(len(units)))
            cut = self.rng.sample(order, k)
            order = [i for i in order if i not in cut]
            for i in cut:
                order.insert(self.rng.randint(0, len(order)), i)
            if _longest_increasing(order) < len(order):
                break
        return [units[i] for i in order]

    def source_line(self, units: list[str], title: str) -> list[str]:
        names = [self.rng.choice(_SURNAMES) + "".join(self.rng.sample(_GIVEN, self.rng.randint(1, 2))) for _ in "ab"]
        line = self.rng.choice(_SOURCE_TEMPLATES).format(outlet=self.rng.choice(_OUTLETS), editor=names[0],
                                                         author=names[1], title=title or "无题")
        if self.rng.random() < 0.3:
            return [line + "\n", *units]
        return [*units[:-1], units[-1] if _ENDS_AT_BOUNDARY.search(units[-1]) else units[-1] + "\n", line]

    def short(self, units: list[str]) -> list[str]:
        target, out = sum(map(len, units)) / 3, []
        for unit in units:
            if out and sum(map(len, out)) >= target:
                break
            out.append(unit)
        return out

    def reformat(self, units: list[str]) -> list[str]:
        stripped = [u.strip() for u in units]
        if self.rng.random() < 0.5 or not any("\n" in u for u in units):  # re-indented, as another template
            return ["\u3000\u3000" + u + ("\n" if self.rng.random() < 0.4 else "") for u in stripped]
        return stripped  # flattened: line breaks and indentation dropped

    def mixed(self, units: list[str], title: str) -> list[str]:
        return self.source_line(self.add(units) if self.rng.random() < 0.5 else self.replace(units), title)

    # Character level: each changes exactly max(1, round(share * len(text))) characters of the original.

    def _budget(self, text: str, share: float) -> int:
        if not isinstance(text, str) or not text.strip():
            raise ValueError("text to edit must be a non-empty str")
        if not (isinstance(share, (int, float)) and 0.0 < share < 1.0):
            raise ValueError(f"share is the fraction of the text to edit, in (0, 1): got {share!r} (5% is 0.05)")
        return max(1, round(share * len(text)))

    def _span(self, text: str) -> int:
        return len(self.rng.choice(split_units(text) or [text]))

    def add_chars(self, text: str, share: float) -> str:
        """Donor sentences inserted at random positions until ``share`` of the length is added."""
        remaining = self._budget(text, share)
        while remaining > 0:
            piece = self.rng.choice(self.donors)[:remaining]
            position = self.rng.randint(0, len(text))
            text, remaining = text[:position] + piece + text[position:], remaining - len(piece)
        return text

    def delete_chars(self, text: str, share: float) -> str:
        """Sentence-sized spans deleted at random positions until ``share`` of the length is gone."""
        remaining = self._budget(text, share)
        while remaining > 0:
            size = min(remaining, self._span(text))
            start = self.rng.randint(0, len(text) - size)
            text, remaining = text[:start] + text[start + size :], remaining - size
        return text

    def modify_chars(self, text: str, share: float) -> str:
        """The E-Simhash paper's mix: disjoint spans covering exactly ``share`` of the text, each one modified
        (2-6 characters overwritten), deleted, moved elsewhere or replaced by donor text of its length."""
        budget = remaining = self._budget(text, share)
        sizes = []
        while remaining > 0:
            operation = self.rng.choice(("modify", "delete", "move", "replace"))
            wanted = self.rng.randint(*self.MODIFY_CHARS) if operation == "modify" else self._span(text)
            sizes.append((operation, min(wanted, remaining)))
            remaining -= sizes[-1][1]
        # Spans at uniformly random disjoint places: the untouched characters cut into len(sizes) + 1 gaps.
        cuts = sorted(self.rng.randint(0, len(text) - budget) for _ in sizes)
        out, moved, position, previous = [], [], 0, 0
        for cut, (operation, size) in zip(cuts, sizes):
            out.append(text[position : position + cut - previous])
            position += cut - previous
            previous = cut
            span = text[position : position + size]
            position += size
            if operation in ("modify", "replace"):
                out.append(self._donor_clip(size))
            elif operation == "move":
                moved.append(span)
        out.append(text[position:])
        result = "".join(out)
        for span in moved:
            at = self.rng.randint(0, len(result))
            result = result[:at] + span + result[at:]
        return result

    def _donor_clip(self, size: int) -> str:
        donor = "".join(self.donors)
        donor *= size // len(donor) + 1
        start = self.rng.randrange(len(donor) - size + 1)
        return donor[start : start + size]


# --------------------------------------------------------------------------------- builders


def _donor_units(articles: Iterable[Article]) -> list[str]:
    return [u.strip() for a in articles for u in a.units if 10 <= len(unit_key(u)) <= 200 and _ENDS_AT_BOUNDARY.search(u)]


def _pool(data_dir: Path, split: str, rng: random.Random) -> tuple[tuple[dict, ...], list[Article]]:
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    articles, cleaned = _corpus(str(Path(data_dir).resolve()))
    pool = [a for a in cleaned if _in_split(a.origin, split)]
    rng.shuffle(pool)
    return articles, pool


def pick_bases(data_dir: Path, count: int, rng: random.Random, *, split: str = "test", min_chars: int = 800,
               donor_texts: int = 50) -> tuple[list[tuple[str, str]], Editor]:
    """``count`` originals ``(origin id, text)`` of ``min_chars``+ characters (the E-Simhash paper drops
    shorter ones) and an :class:`Editor` adding sentences of ``donor_texts`` other articles (the
    semantic-fingerprint paper's "50 texts split into sentences")."""
    _, pool = _pool(data_dir, split, rng)
    long = [a for a in pool if len(a.text) >= min_chars]
    if len(long) < count + donor_texts:
        raise ValueError(f"the {split} pool has {len(long)} articles of {min_chars}+ characters: ask for fewer")
    return [(a.origin, a.text) for a in long[:count]], Editor(rng, _donor_units(long[count : count + donor_texts]))


def build_text_benchmark(
    data_dir: Path, *, seed: int = 1, split: str = "test", stories: int = 600, max_reprints: int = 4,
    singletons: int = 600, disclaimer_negatives: int = 100, same_topic_pairs: int = 150, junk: int = 40,
    other_corpus: int = 150, min_edit_ratio: float = 0.01, max_edit_ratio: float = 0.30,
    kinds: Sequence[str] = REPRINT_KINDS, long_chars: int = 1200,
) -> list[dict]:
    """The benchmark documents of one ``split``, shuffled into one stream; the same arguments give the same list.

    ``stories`` originals get 1 to ``max_reprints`` reprints of ``kinds`` (``short`` only for originals of
    ``long_chars`` or more) with ``min_edit_ratio``-``max_edit_ratio`` of their units edited; ``singletons``
    have no copy; the hard negatives are ``disclaimer_negatives`` + ``2 * same_topic_pairs`` + ``junk`` +
    ``other_corpus`` documents (the last two at most what the data hold; ``other_corpus`` in the test split
    only).
    """
    for name, value in (("stories", stories), ("singletons", singletons), ("junk", junk), ("other_corpus", other_corpus),
                        ("disclaimer_negatives", disclaimer_negatives), ("same_topic_pairs", same_topic_pairs)):
        if not isinstance(value, int) or value < 0:
            raise ValueError(f"{name} must be an integer >= 0, got {value!r}")
    if not isinstance(max_reprints, int) or max_reprints < 1:
        raise ValueError(f"max_reprints must be an integer >= 1, got {max_reprints!r}")
    if not 0 < min_edit_ratio <= max_edit_ratio < 1:
        raise ValueError(f"edit ratios must satisfy 0 < min_edit_ratio <= max_edit_ratio < 1, got "
                         f"{min_edit_ratio}, {max_edit_ratio}")
    if not kinds or set(kinds) - set(REPRINT_KINDS):
        raise ValueError(f"kinds must be a non-empty subset of {REPRINT_KINDS}, got {tuple(kinds)!r}")
    data_dir = Path(data_dir)
    rng = random.Random(seed)
    articles, pool = _pool(data_dir, split, rng)
    if stories + singletons + disclaimer_negatives > len(pool) // 2:
        raise ValueError(f"the {split} pool holds {len(pool)} articles; stories + singletons + disclaimer_negatives "
                         "must stay under half of it (the rest donate sentences): ask for fewer")
    originals, lonely = pool[:stories], pool[stories : stories + singletons]
    rest = pool[stories + singletons :]
    disclaimed = [a for a in rest if len(a.text) <= 1000][:disclaimer_negatives]  # the disclaimer: 1/4-1/2 of each
    editor = Editor(rng, _donor_units(a for a in rest if a not in disclaimed), min_ratio=min_edit_ratio,
                    max_ratio=max_edit_ratio)
    docs: list[dict] = []

    def emit(text: str, title: str, story: str, kind: str, origin: str, edit_ratio: float = 0.0) -> None:
        docs.append({"text": text, "title": title, "story": story, "kind": kind, "edit_ratio": round(edit_ratio, 6),
                     "origin": origin})

    for number, base in enumerate(originals):
        story, original = f"story-{number:05d}", base.text
        emit(original, base.title, story, "original", base.origin)
        eligible = [k for k in kinds if k != "short" or len(original) >= long_chars] or ["source"]
        operations = {"add": editor.add, "delete": editor.delete, "replace": editor.replace, "reorder": editor.reorder,
                      "short": editor.short, "format": editor.reformat,
                      "source": lambda units: editor.source_line(units, base.title),
                      "mixed": lambda units: editor.mixed(units, base.title)}
        for _ in range(rng.randint(1, max_reprints)):
            kind = rng.choice(eligible)
            text = join_units(operations[kind](list(base.units)))
            affix = rng.choice(_TITLE_AFFIXES).format(outlet=rng.choice(_OUTLETS))
            title = affix + base.title if affix.endswith("：") else base.title + affix
            emit(text, title, story, kind, base.origin, sentence_edit_ratio(original, text))
    for number, base in enumerate(lonely):
        emit(base.text, base.title, f"single-{number:05d}", "singleton", base.origin)
    for number, base in enumerate(disclaimed):
        emit(base.text.rstrip() + "\n" + DISCLAIMER, base.title, f"disclaimer-{number:05d}", "disclaimer", base.origin)
    if same_topic_pairs:
        for number, text in enumerate(_same_topic_texts(data_dir, same_topic_pairs, split, rng)):
            emit(text, "", f"topic-{number:05d}", "same_topic", "sohu2021-samples")
    real_junk = sorted(t for t in {a["text"].strip() for a in articles if _is_junk(a["text"])} if _in_split(t, split))
    for number in range(junk):
        if number < len(real_junk):
            emit(real_junk[number], "", f"junk-{number:05d}", "junk", "sina-news-2018")
        else:
            block = _JUNK_TEMPLATES[number % len(_JUNK_TEMPLATES)].format(
                sid=rng.randint(10000, 99999), id=rng.randint(100000, 999999), ch=rng.randint(1, 99))
            emit(block * rng.randint(1, 4), "", f"junk-{number:05d}", "junk", "generated")
    if other_corpus and split == "test":
        for number, text in enumerate(_sogou_texts(data_dir, other_corpus, rng)):
            emit(text, "", f"other-{number:05d}", "other_corpus", "sogou-smarty")
    rng.shuffle(docs)
    return [{"id": f"doc-{number:05d}", **doc} for number, doc in enumerate(docs)]


def _is_junk(text: str) -> bool:
    """A scraped page that is only script/CSS: script markers and hardly any Chinese past the title."""
    text = text.strip()
    return len(text) >= 100 and _has_script(text) and _cjk(text.split("\n", 1)[-1]) < 40


def write_jsonl(docs: Iterable[dict], path: Path) -> int:
    """One JSON object per line (UTF-8, Chinese unescaped); returns the number written."""
    lines = [json.dumps(doc, ensure_ascii=False) + "\n" for doc in docs]
    Path(path).write_text("".join(lines), encoding="utf-8")
    return len(lines)


def read_jsonl(path: Path) -> list[dict]:
    """The lines :func:`write_jsonl` wrote (also ``newsdedup dedup`` verdict files)."""
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
