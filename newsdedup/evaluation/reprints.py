"""A seeded, deterministic text-level reprint benchmark built from real news texts.

The protocols come from the papers in ``../shared/papers``: the semantic-fingerprint Simhash paper
adds or deletes 1-20% of a text at random positions and moves sentences to random positions;
E-Simhash modifies, deletes, moves and replaces up to 20%; the issue adds source/editor lines and a
short version (first third) of a long article.  Every operation works on *sentence units* (see
:func:`split_units`), so each reprint's ``edit_ratio`` is exact: the share of the original's units
that had to be added, deleted, replaced or moved (:func:`sentence_edit_ratio` recomputes it from
the two texts alone).

Documents (one dict each)::

    {"id", "text", "title", "story", "kind", "edit_ratio", "origin"}

``story`` is the gold: documents share a story exactly when they are copies of one article.
Kinds: ``original`` and the reprint kinds in :data:`REPRINT_KINDS`; ``singleton`` (an article
with no copy); and the hard negatives in :data:`NEGATIVE_KINDS`, each its own story:

- ``disclaimer``: different articles with the same long portal disclaimer paragraph appended;
- ``same_topic``: same-topic but different texts (``sohu2021-samples`` label-A pairs whose
  character 5-gram Jaccard is below 0.2, i.e. not textual copies);
- ``junk``: texts that are only JavaScript/CSS (the corpus's scraped slide-show pages plus
  generated ones that differ only in ids, as scraped pages do).

The sina corpus has natural exact and near duplicates, so the base pool is cleaned first:
sentence units found in 3 or more corpus texts (portal boilerplate, stock leads) are removed, and
texts sharing any remaining sentence of 20+ characters are grouped; only one text per group is
used anywhere in the benchmark (other members are dropped, never used as donors), so two stories
never share text unless the benchmark put it there.

The corpus is read at run time from ``data_dir`` (``../shared/data``); nothing of it ships with
the package.
"""

from __future__ import annotations

import gzip
import json
import random
import re
import unicodedata
from bisect import bisect_left
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

__all__ = [
    "ALL_KINDS",
    "DISCLAIMER",
    "NEGATIVE_KINDS",
    "REPRINT_KINDS",
    "build_text_benchmark",
    "char_ngram_jaccard",
    "join_units",
    "load_sina_articles",
    "read_jsonl",
    "sentence_edit_ratio",
    "split_units",
    "unit_key",
    "write_jsonl",
]

SINA_ARTICLES = Path("sina-news-2018") / "articles.jsonl.gz"
SOHU_PAIRS = Path("sohu2021-samples") / "data" / "raw" / "samples.txt"

#: Reprint kinds.  ``add``/``delete``/``replace``/``reorder``: 1-30% of the sentence units added
#: (from other articles), deleted, replaced (by other articles' sentences) or moved to random
#: positions; ``source``: a source/editor line added; ``short``: the first third of a long article;
#: ``format``: only whitespace and line breaks changed (a flattened or re-indented copy);
#: ``mixed``: a source line plus 1-30% of units added or replaced.
REPRINT_KINDS = ("add", "delete", "replace", "reorder", "source", "short", "format", "mixed")
NEGATIVE_KINDS = ("disclaimer", "same_topic", "junk")
ALL_KINDS = ("original", *REPRINT_KINDS, "singleton", *NEGATIVE_KINDS)

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

# Made-up outlets and name parts for source/editor lines.
_OUTLETS = (
    "新华网", "人民网", "中国新闻网", "央视新闻客户端", "澎湃新闻", "环球网", "光明网", "中国青年网", "北京青年报",
    "南方都市报", "新京报", "界面新闻", "每日经济新闻", "钱江晚报", "扬子晚报", "华商报", "齐鲁晚报", "红星新闻",
)
_SURNAMES = "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘蒋蔡余杜叶程苏魏吕丁任沈姚卢"
_GIVEN = "伟芳娜敏静丽强磊军洋勇艳杰娟涛明超秀霞平刚桂英华玉萍红娥玲芬燕彬鹏辉宇浩凯晨欣怡婷雪琳晓文博"
_SOURCE_TEMPLATES = (
    "来源：{outlet} 责任编辑：{editor}",
    "（来源：{outlet}）",
    "责任编辑：{editor}",
    "本文来源：{outlet}，作者：{author}，责任编辑：{editor}",
    "（原标题：{title}）来源：{outlet}",
    "文章来源：{outlet}　编辑：{editor}",
)
_TITLE_AFFIXES = ("", "", "（转载）", "｜{outlet}", "【{outlet}】", "转：", "原创：")

# A unit ends after a run of sentence terminators (plus closing quotes/brackets) or a line break,
# together with the whitespace that follows.
_BOUNDARY = re.compile(r"(?:[。！？!?；;]+[”’\"」』）)\]】]*|\n)\s*")
_ENDS_AT_BOUNDARY = re.compile(r"(?:[。！？!?；;]+[”’\"」』）)\]】]*|\n)\s*$")
_WHITESPACE = re.compile(r"\s+")
_NOT_CJK = re.compile(r"[^\u4e00-\u9fff]+")
_WORD_CHAR = re.compile(r"[^\W_]")  # a letter or digit (Chinese characters are letters)
# Substrings that only script, CSS, URLs or mis-decoded bytes put into a scraped text.
_SCRIPT_MARKERS = ("function", "var ", "{", "}", "\ufffd", "document.", "window.", "http", "//")


def _has_word(piece: str) -> bool:
    return _WORD_CHAR.search(piece) is not None


def _has_script(text: str) -> bool:
    return any(marker in text for marker in _SCRIPT_MARKERS)


def _cjk_count(text: str) -> int:
    return len(_NOT_CJK.sub("", text))


def split_units(text: str) -> list[str]:
    """Split ``text`` into sentence units whose concatenation is ``text``.

    A unit ends after sentence-final punctuation (。！？!?；, with any closing quotes) or a line
    break, and keeps the whitespace that follows; pieces with no letter or digit are glued to
    their neighbour, so every unit carries wording.

    >>> split_units("第一句。“第二句！”\\n第三句")
    ['第一句。', '“第二句！”\\n', '第三句']
    """
    pieces: list[str] = []
    start = 0
    for match in _BOUNDARY.finditer(text):
        if match.end() > start:
            pieces.append(text[start : match.end()])
            start = match.end()
    if start < len(text):
        pieces.append(text[start:])
    units: list[str] = []
    pending = ""  # leading pieces without wording, glued to the first unit
    for piece in pieces:
        if _has_word(piece):
            units.append(pending + piece)
            pending = ""
        elif units:
            units[-1] += piece
        else:
            pending += piece
    if pending:
        if units:
            units[-1] += pending
        else:
            units.append(pending)
    return units


def unit_key(unit: str) -> str:
    """What two units must share to count as the same sentence: the unit without whitespace."""
    return "".join(unit.split())


def join_units(units: Sequence[str]) -> str:
    """Concatenate units, adding a line break where one would otherwise run into the next.

    ``split_units(join_units(units))`` gives back the same units (up to that whitespace).
    """
    parts: list[str] = []
    last = len(units) - 1
    for i, unit in enumerate(units):
        parts.append(unit)
        if i < last and not _ENDS_AT_BOUNDARY.search(unit):
            parts.append("\n")
    return "".join(parts)


def _longest_increasing_subsequence(values: Sequence[int]) -> int:
    tails: list[int] = []
    for value in values:
        i = bisect_left(tails, value)
        if i == len(tails):
            tails.append(value)
        else:
            tails[i] = value
    return len(tails)


def sentence_edit_ratio(original: str, reprint: str) -> float:
    """The share of ``original``'s sentence units added, deleted, replaced or moved in ``reprint``.

    Counted from the two texts alone: with ``O`` and ``R`` the unit multisets, units only in ``R``
    were added (or replaced something), units only in ``O`` were deleted (or replaced); when the
    multisets are equal the moved units are those outside the longest in-order run.  The result
    is ``max(added, deleted) / len(O)`` or ``moved / len(O)``; the generator's ``edit_ratio`` is
    this value.

    >>> sentence_edit_ratio("甲。乙。丙。丁。", "甲。乙。丙。丁。戊。")
    0.25
    >>> sentence_edit_ratio("甲。乙。丙。丁。", "乙。丙。丁。甲。")
    0.25
    """
    if not _has_word(original):
        raise ValueError("the original text has no wording (no letter or digit): pass an article text")
    original_keys = [unit_key(u) for u in split_units(original)]
    reprint_keys = [unit_key(u) for u in split_units(reprint)]
    before, after = Counter(original_keys), Counter(reprint_keys)
    added = sum((after - before).values())
    deleted = sum((before - after).values())
    if added or deleted:
        return max(added, deleted) / len(original_keys)
    # Same multiset: count the units out of order.  Repeated units are matched in order.
    positions: dict[str, list[int]] = {}
    for i, key in enumerate(original_keys):
        positions.setdefault(key, []).append(i)
    order = [positions[key].pop(0) for key in reprint_keys]
    return (len(order) - _longest_increasing_subsequence(order)) / len(original_keys)


def _char_ngrams(text: str, n: int = 5) -> set[str]:
    text = _WHITESPACE.sub("", unicodedata.normalize("NFKC", text))
    if len(text) < n:
        return {text} if text else set()
    return {text[i : i + n] for i in range(len(text) - n + 1)}


def char_ngram_jaccard(a: str, b: str, n: int = 5) -> float:
    """Jaccard of the whitespace-free character n-gram sets (the ``J5`` of the labelled pairs)."""
    grams_a, grams_b = _char_ngrams(a, n), _char_ngrams(b, n)
    union = len(grams_a | grams_b)
    return len(grams_a & grams_b) / union if union else 0.0


# --------------------------------------------------------------------------------------------
# Corpus reading and cleaning


def load_sina_articles(data_dir: Path) -> list[dict]:
    """The sina-news-2018 texts (``{"id", "category", "title", "text"}``), in file order."""
    path = Path(data_dir) / SINA_ARTICLES
    if not path.is_file():
        raise ValueError(f"{path} not found: pass data_dir=the shared data folder (../shared/data)")
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _is_junk(article: dict) -> bool:
    """Scraped pages that are only script/CSS: script markers and hardly any Chinese past the title."""
    text = article["text"].strip()
    if len(text) < 100 or not _has_script(text):
        return False
    body = text.split("\n", 1)[1] if "\n" in text else text
    return _cjk_count(body) < 40


@dataclass(frozen=True)
class _Base:
    """One cleaned corpus article usable as an original, singleton, negative or donor."""

    origin: str
    title: str
    units: tuple[str, ...]

    @property
    def text(self) -> str:
        return join_units(self.units)


def _clean_pool(articles: Sequence[dict], *, min_chars: int, max_chars: int, min_units: int) -> list[_Base]:
    """One clean text per natural duplicate group, boilerplate sentences removed (see module doc)."""
    split = [split_units(a["text"].strip()) for a in articles]
    keys = [[unit_key(u) for u in units] for units in split]
    seen_in: Counter[str] = Counter()
    for text_keys in keys:
        seen_in.update({k for k in text_keys if len(k) >= 10})
    boilerplate = {key for key, count in seen_in.items() if count >= 3}

    candidates: list[tuple[dict, list[str]]] = []
    for article, units, text_keys in zip(articles, split, keys):
        text = article["text"]
        if _has_script(text) or len(text) < min_chars:
            continue  # script/CSS remnants: not clean article text
        kept = [u for u, k in zip(units, text_keys) if k not in boilerplate]
        clean = join_units(kept).strip()
        if not (min_chars <= len(clean) <= max_chars):
            continue
        if _cjk_count(clean) < 0.5 * len(clean):
            continue
        kept = split_units(clean)
        if len(kept) < min_units:
            continue
        candidates.append((article, kept))

    # Union texts sharing a sentence of 20+ characters: natural copies and shared stock leads.
    parent = list(range(len(candidates)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    first_with: dict[str, int] = {}
    for i, (_, units) in enumerate(candidates):
        for key in map(unit_key, units):
            if len(key) < 20:
                continue
            j = first_with.setdefault(key, i)
            if j != i:
                parent[find(i)] = find(j)
    pool: list[_Base] = []
    used_groups: set[int] = set()
    for i, (article, units) in enumerate(candidates):
        group = find(i)
        if group in used_groups:
            continue
        used_groups.add(group)
        pool.append(_Base(origin=article["id"], title=article.get("title") or "", units=tuple(units)))
    return pool


@lru_cache(maxsize=1)
def _corpus(data_dir: str) -> tuple[tuple[dict, ...], tuple[_Base, ...]]:
    """The corpus and its cleaned pool, read once per process (a few seconds) and never mutated."""
    articles = tuple(load_sina_articles(Path(data_dir)))
    return articles, tuple(_clean_pool(articles, min_chars=300, max_chars=6000, min_units=6))


# --------------------------------------------------------------------------------------------
# Reprint operations


class _Editor:
    """Applies the reprint operations with one random generator and one donor sentence pool."""

    def __init__(self, rng: random.Random, donor_units: Sequence[str], *, min_ratio: float, max_ratio: float) -> None:
        self.rng = rng
        self.donor_units = donor_units
        self.min_ratio = min_ratio
        self.max_ratio = max_ratio

    def _count(self, n: int) -> int:
        wanted = self.rng.uniform(self.min_ratio, self.max_ratio)
        k = max(1, round(wanted * n))
        while k > 1 and k / n > self.max_ratio:
            k -= 1
        return k

    def _donors(self, k: int) -> list[str]:
        return [self.rng.choice(self.donor_units) for _ in range(k)]

    def add(self, units: list[str]) -> list[str]:
        out = list(units)
        for unit in self._donors(self._count(len(units))):
            out.insert(self.rng.randint(0, len(out)), unit)
        return out

    def delete(self, units: list[str]) -> list[str]:
        drop = set(self.rng.sample(range(len(units)), self._count(len(units))))
        return [u for i, u in enumerate(units) if i not in drop]

    def replace(self, units: list[str]) -> list[str]:
        out = list(units)
        k = self._count(len(units))
        for i, unit in zip(sorted(self.rng.sample(range(len(units)), k)), self._donors(k)):
            out[i] = unit
        return out

    def reorder(self, units: list[str]) -> list[str]:
        # The paper's protocol: cut sentences out and reinsert them at random positions.
        k = self._count(len(units))
        for _ in range(20):  # a moved unit can land where it was; retry until something moved
            order = list(range(len(units)))
            moved = self.rng.sample(order, k)
            order = [i for i in order if i not in set(moved)]
            for i in moved:
                order.insert(self.rng.randint(0, len(order)), i)
            if _longest_increasing_subsequence(order) < len(order):
                break
        return [units[i] for i in order]

    def source_line(self, units: list[str], title: str) -> list[str]:
        editor = self.rng.choice(_SURNAMES) + "".join(self.rng.sample(_GIVEN, self.rng.randint(1, 2)))
        author = self.rng.choice(_SURNAMES) + "".join(self.rng.sample(_GIVEN, self.rng.randint(1, 2)))
        line = self.rng.choice(_SOURCE_TEMPLATES).format(
            outlet=self.rng.choice(_OUTLETS), editor=editor, author=author, title=title or "无题"
        )
        if self.rng.random() < 0.3:
            return [line + "\n", *units]
        out = list(units)
        if not _ENDS_AT_BOUNDARY.search(out[-1]):
            out[-1] += "\n"
        return [*out, line]

    def short(self, units: list[str]) -> list[str]:
        target = sum(len(u) for u in units) / 3
        out: list[str] = []
        for unit in units:
            if out and sum(len(u) for u in out) >= target:
                break
            out.append(unit)
        return out

    def reformat(self, units: list[str]) -> list[str]:
        stripped = [u.strip() for u in units]
        if self.rng.random() < 0.5 or not any("\n" in u for u in units):
            # Re-indented paragraphs, as another portal's template renders them.
            return ["\u3000\u3000" + u + ("\n" if self.rng.random() < 0.4 else "") for u in stripped]
        return stripped  # flattened: line breaks and indentation dropped

    def mixed(self, units: list[str], title: str) -> list[str]:
        edited = self.add(units) if self.rng.random() < 0.5 else self.replace(units)
        return self.source_line(edited, title)


def _reprint_title(rng: random.Random, title: str) -> str:
    affix = rng.choice(_TITLE_AFFIXES).format(outlet=rng.choice(_OUTLETS))
    if not affix:
        return title
    return affix + title if affix.endswith("：") else title + affix


# --------------------------------------------------------------------------------------------
# Negatives


def _same_topic_texts(data_dir: Path, *, pairs: int, min_chars: int, rng: random.Random) -> list[str]:
    """Texts of label-A (same topic) sohu pairs that are not textual copies of each other."""
    path = Path(data_dir) / SOHU_PAIRS
    if not path.is_file():
        raise ValueError(f"{path} not found: pass data_dir=the shared data folder, or same_topic_pairs=0")
    with path.open(encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    chosen: list[tuple[str, str]] = []
    for row in rows:
        a, b = row["source"].strip(), row["target"].strip()
        if str(row.get("labelA")) != "1" or min(len(a), len(b)) < min_chars:
            continue
        if char_ngram_jaccard(a, b) >= 0.2:
            continue  # a textual near-copy, not a same-topic negative
        chosen.append((a, b))
    rng.shuffle(chosen)
    # Keep pairs whose texts are far (J5 < 0.2) from every text kept so far: one text may recur
    # across pairs, and different pairs may quote one another.
    kept: list[str] = []
    kept_grams: list[set[str]] = []
    postings: dict[str, list[int]] = {}
    for a, b in chosen:
        if len(kept) >= 2 * pairs:
            break
        grams = [_char_ngrams(a), _char_ngrams(b)]
        if any(_too_close(g, kept_grams, postings) for g in grams):
            continue
        for text, g in zip((a, b), grams):
            for gram in g:
                postings.setdefault(gram, []).append(len(kept))
            kept.append(text)
            kept_grams.append(g)
    return kept


def _too_close(grams: set[str], kept_grams: list[set[str]], postings: dict[str, list[int]]) -> bool:
    shared: Counter[int] = Counter()
    for gram in grams:
        shared.update(postings.get(gram, ()))
    return any(count / len(grams | kept_grams[i]) >= 0.2 for i, count in shared.items())


_JUNK_TEMPLATES = (
    (
        "var ua = navigator.userAgent.toLowerCase();\nvar isIOS = /\\(iPad/i.test(ua);\nif(isIOS){{\n"
        "  location.replace('http://slide.example.com.cn/play.php?sid={sid}&id={id}&ch={ch}'+location.hash);\n}}\n"
        "a:link{{color:#333;text-decoration:none;}}\na:hover{{color:#f00;text-decoration:underline;}}\n"
        "body{{color:#000;background:#fff;font:12px/20px \"Microsoft Yahei\",\"SimSun\",sans-serif;}}\n"
        ".slide-wrap{{width:1000px;margin:0 auto;overflow:hidden;}}\n.article-editor{{display:none;visibility:hidden;}}\n"
    ),
    (
        "(function(){{\n  var adScript = document.createElement('script');\n"
        "  adScript.src = '//ad.example.com.cn/loader/{sid}/left_{id}.js';\n"
        "  document.getElementsByTagName('head')[0].appendChild(adScript);\n}})();\n"
        "window.PAGE_CONFIG = {{ channel: '{ch}', docid: '{id}', sid: '{sid}', comment: true, share: ['weibo','wechat'] }};\n"
    ),
    (
        "PageWidget.load({{\n  trigger: {{ id: 'videoList{ch}' }},\n  require: [\n"
        "    {{ url: '//static.example.com.cn/player/js/player_v1.js' }},\n"
        "    {{ url: '//static.example.com.cn/page/video{sid}.js' }}\n  ],\n"
        "  onAfterModuleLoad: function () {{ new VideoPlayer({{ container: 'videoList{ch}', video_id: {id}, autoplay: false }}); }}\n"
        "}});\n"
    ),
)


def _generated_junk(rng: random.Random, count: int) -> list[str]:
    texts: list[str] = []
    for i in range(count):
        template = _JUNK_TEMPLATES[i % len(_JUNK_TEMPLATES)]
        block = template.format(sid=rng.randint(10000, 99999), id=rng.randint(100000, 999999), ch=rng.randint(1, 99))
        texts.append(block * rng.randint(1, 4))
    return texts


# --------------------------------------------------------------------------------------------
# The benchmark


def build_text_benchmark(
    data_dir: Path,
    *,
    seed: int = 1,
    stories: int = 600,
    max_reprints: int = 4,
    singletons: int = 600,
    disclaimer_negatives: int = 100,
    same_topic_pairs: int = 150,
    junk: int = 40,
    min_edit_ratio: float = 0.01,
    max_edit_ratio: float = 0.30,
    kinds: Sequence[str] = REPRINT_KINDS,
    long_chars: int = 1200,
) -> list[dict]:
    """Build the benchmark documents, shuffled into one stream; the same arguments give the same list.

    ``stories`` originals each get 1 to ``max_reprints`` reprints of the given ``kinds`` (``short``
    only for originals of ``long_chars`` or more), with ``min_edit_ratio``-``max_edit_ratio`` of
    their sentence units edited.  ``singletons`` articles have no copy; the hard negatives are
    ``disclaimer_negatives`` + ``2 * same_topic_pairs`` (at most; the sohu sample limits it) +
    ``junk`` documents, each its own story.  ``data_dir`` is the shared data folder.
    """
    for name, value in (("stories", stories), ("singletons", singletons), ("junk", junk),
                        ("disclaimer_negatives", disclaimer_negatives), ("same_topic_pairs", same_topic_pairs)):
        if not isinstance(value, int) or value < 0:
            raise ValueError(f"{name} must be an integer >= 0, got {value!r}")
    if not isinstance(max_reprints, int) or max_reprints < 1:
        raise ValueError(f"max_reprints must be an integer >= 1, got {max_reprints!r}")
    if not 0 < min_edit_ratio <= max_edit_ratio < 1:
        raise ValueError(
            f"edit ratios must satisfy 0 < min_edit_ratio <= max_edit_ratio < 1, got {min_edit_ratio}, {max_edit_ratio}"
        )
    unknown = set(kinds) - set(REPRINT_KINDS)
    if unknown or not kinds:
        raise ValueError(f"kinds must be a non-empty subset of {REPRINT_KINDS}, got {tuple(kinds)!r}")

    rng = random.Random(seed)
    articles, cleaned = _corpus(str(Path(data_dir).resolve()))
    pool = list(cleaned)
    rng.shuffle(pool)
    needed = stories + singletons + disclaimer_negatives
    if needed > len(pool) // 2:
        raise ValueError(
            f"the cleaned pool holds {len(pool)} articles; stories + singletons + disclaimer_negatives "
            f"({needed}) must stay under half of it (the rest donate sentences): ask for fewer"
        )
    originals = pool[:stories]
    lonely = pool[stories : stories + singletons]
    # Articles of 300-1000 characters: the disclaimer is a quarter to a half of each text.
    rest = pool[stories + singletons :]
    disclaimed = [b for b in rest if len(b.text) <= 1000][:disclaimer_negatives]
    used = {b.origin for b in disclaimed}
    donor_units = [
        u.strip()
        for b in rest
        if b.origin not in used
        for u in b.units
        if 10 <= len(unit_key(u)) <= 200 and _ENDS_AT_BOUNDARY.search(u.strip())
    ]
    editor = _Editor(rng, donor_units, min_ratio=min_edit_ratio, max_ratio=max_edit_ratio)

    docs: list[dict] = []

    def emit(text: str, title: str, story: str, kind: str, edit_ratio: float, origin: str) -> None:
        docs.append({"text": text, "title": title, "story": story, "kind": kind,
                     "edit_ratio": round(edit_ratio, 6), "origin": origin})

    for number, base in enumerate(originals):
        story = f"story-{number:05d}"
        original = base.text
        emit(original, base.title, story, "original", 0.0, base.origin)
        eligible = [k for k in kinds if k != "short" or len(original) >= long_chars] or ["source"]
        for _ in range(rng.randint(1, max_reprints)):
            kind = rng.choice(eligible)
            units = list(base.units)
            if kind == "add":
                units = editor.add(units)
            elif kind == "delete":
                units = editor.delete(units)
            elif kind == "replace":
                units = editor.replace(units)
            elif kind == "reorder":
                units = editor.reorder(units)
            elif kind == "source":
                units = editor.source_line(units, base.title)
            elif kind == "short":
                units = editor.short(units)
            elif kind == "format":
                units = editor.reformat(units)
            else:
                units = editor.mixed(units, base.title)
            text = join_units(units)
            emit(text, _reprint_title(rng, base.title), story, kind, sentence_edit_ratio(original, text), base.origin)

    for number, base in enumerate(lonely):
        emit(base.text, base.title, f"single-{number:05d}", "singleton", 0.0, base.origin)
    for number, base in enumerate(disclaimed):
        text = base.text.rstrip() + "\n" + DISCLAIMER
        emit(text, base.title, f"disclaimer-{number:05d}", "disclaimer", 0.0, base.origin)
    if same_topic_pairs:
        for number, text in enumerate(_same_topic_texts(Path(data_dir), pairs=same_topic_pairs, min_chars=30, rng=rng)):
            emit(text, "", f"topic-{number:05d}", "same_topic", 0.0, "sohu2021-samples")
    if junk:
        real = sorted({a["text"].strip() for a in articles if _is_junk(a)})
        texts = real[:junk] + _generated_junk(rng, max(0, junk - len(real)))
        for number, text in enumerate(texts):
            emit(text, "", f"junk-{number:05d}", "junk", 0.0, "sina-news-2018" if number < len(real) else "generated")

    rng.shuffle(docs)
    for number, doc in enumerate(docs):
        doc["id"] = f"doc-{number:05d}"
    return [{"id": d["id"], **{k: v for k, v in d.items() if k != "id"}} for d in docs]


def write_jsonl(docs: Iterable[dict], path: Path) -> int:
    """Write one JSON object per line (UTF-8, Chinese unescaped); returns the number written."""
    count = 0
    with Path(path).open("w", encoding="utf-8") as handle:
        for doc in docs:
            handle.write(json.dumps(doc, ensure_ascii=False) + "\n")
            count += 1
    return count


def read_jsonl(path: Path) -> list[dict]:
    """Read the lines :func:`write_jsonl` wrote (also ``newsdedup dedup`` verdict files)."""
    with Path(path).open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]
