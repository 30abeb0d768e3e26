"""Learn SpotSigs antecedents from pages whose main text is known (Li et al. 2017, §3.3).

A good antecedent is a stopword that occurs in the article body and hardly anywhere else on the page
(navigation, ads, link lists). Over pages with a known text layer, each candidate stopword gets
``t1`` = its frequency in the text layers and ``t2`` = its frequency in the whole visible pages; the
ratio ``t1 / t2`` says how much of it is body text.

* basic antecedents: ``t1 / t2 > basic_ratio`` (0.6) among the most frequent words (the paper's 的, 在, 了,
  是: ``t1 > 900`` on 125 pages); they find duplicates even at low thresholds;
* optimized antecedents: ``t1 / t2 > optimized_ratio`` (0.9) with a minimum frequency; they raise the
  similarity of true duplicates because they almost never fire in boilerplate.

``newsdedup antecedents --pages DIR... --out DIR`` runs :func:`main`, reading page / text pairs in the
layout of the CWCED data set (``original/<id>.html`` with ``cleaned/<id>.txt``) or HTML files with a
``.txt`` of the same name beside them, and writes ``basic.txt`` and ``optimized.txt``.
"""

from __future__ import annotations

import argparse
import glob
import sys
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from newsdedup import defaults  # the shipped defaults, written there only
from newsdedup.dedup.spotsigs import is_word

__all__ = [
    "AntecedentStats",
    "count_candidates",
    "find_page_pairs",
    "learn_antecedents",
    "main",
    "page_visible_text",
    "read_page_pairs",
    "select_antecedents",
]

#: Frequency floors. The paper's basic antecedents occur more than 900 times in the text layers of its 125
#: pages; as a share that does not depend on corpus size: at least once per 100 body words (on CWCED this
#: keeps exactly 的, 是, 了, 在). Optimized ones need only be seen often enough for t1/t2 to mean something.
DEFAULT_BASIC_MIN_SHARE = 0.01
DEFAULT_MIN_FREQUENCY = 10
PAPER_BASIC = ("的", "在", "了", "是")


@dataclass
class AntecedentStats:
    """Candidate frequencies over a page set: ``text`` = t1 (text layers), ``page`` = t2 (whole pages)."""

    text: Counter[str] = field(default_factory=Counter)
    page: Counter[str] = field(default_factory=Counter)
    pages: int = 0
    text_words: int = 0  # all word tokens of the text layers (the base of the basic share)
    page_words: int = 0

    def ratio(self, word: str) -> float:
        """``t1 / t2`` of ``word`` (0.0 when it never occurs on a page)."""
        t2 = self.page[word]
        return self.text[word] / t2 if t2 else 0.0


def count_candidates(
    pairs: Iterable[tuple[str, str]],
    segment: Callable[[str], list[str]],
    candidates: Collection[str],
) -> AntecedentStats:
    """Count each candidate's occurrences in the text layers (t1) and the whole pages (t2)."""
    wanted = frozenset(word for word in candidates if is_word(word))
    stats = AntecedentStats()
    for page_text, text_layer in pairs:
        page_tokens = [t for t in segment(page_text) if is_word(t)]
        text_tokens = [t for t in segment(text_layer) if is_word(t)]
        stats.pages += 1
        stats.page_words += len(page_tokens)
        stats.text_words += len(text_tokens)
        stats.page.update(t for t in page_tokens if t in wanted)
        stats.text.update(t for t in text_tokens if t in wanted)
    return stats


def select_antecedents(
    stats: AntecedentStats,
    *,
    basic_ratio: float = 0.6,
    optimized_ratio: float = 0.9,
    min_frequency: int = DEFAULT_MIN_FREQUENCY,
    basic_min_share: float = DEFAULT_BASIC_MIN_SHARE,
) -> tuple[list[str], list[str]]:
    """Pick (basic, optimized) antecedents from counted frequencies; the lists are disjoint.

    basic: ``t1 / t2 > basic_ratio`` and ``t1`` at least ``basic_min_share`` of all text-layer words;
    optimized: ``t1 / t2 > optimized_ratio`` and ``t1 >= min_frequency``, minus the basic ones.
    Both are sorted by descending ``t1``, then by the word.
    """
    _check_ratio("basic_ratio", basic_ratio)
    _check_ratio("optimized_ratio", optimized_ratio)
    if isinstance(min_frequency, bool) or not isinstance(min_frequency, int) or min_frequency < 1:
        raise ValueError(f"min_frequency must be an integer >= 1, got {min_frequency!r}")
    if not 0 <= basic_min_share < 1:
        raise ValueError(f"basic_min_share must be a share of text-layer words in [0, 1), got {basic_min_share!r}")
    basic_floor = max(min_frequency, basic_min_share * stats.text_words)
    by_frequency = sorted(stats.text, key=lambda word: (-stats.text[word], word))
    basic = [w for w in by_frequency if stats.text[w] >= basic_floor and stats.ratio(w) > basic_ratio]
    chosen = set(basic)
    optimized = [
        w
        for w in by_frequency
        if w not in chosen and stats.text[w] >= min_frequency and stats.ratio(w) > optimized_ratio
    ]
    return basic, optimized


def learn_antecedents(
    pairs: Iterable[tuple[str, str]],
    segment: Callable[[str], list[str]],
    candidates: Collection[str],
    *,
    basic_ratio: float = 0.6,
    optimized_ratio: float = 0.9,
    min_frequency: int = DEFAULT_MIN_FREQUENCY,
    basic_min_share: float = DEFAULT_BASIC_MIN_SHARE,
) -> tuple[list[str], list[str]]:
    """Learn (basic, optimized) antecedents from ``(whole page visible text, its text layer)`` pairs.

    ``segment`` splits a text into words (the segmenter the dedup pipeline uses, so the words match);
    ``candidates`` is a general stopword list. See :func:`select_antecedents` for the rules.

    >>> pairs = [("导航 的 首页 正文 的 句子 了 的 话", "正文 的 句子 了 的 话"),
    ...          ("正文 是 的 好 了", "正文 是 的 好 了")]
    >>> learn_antecedents(pairs, str.split, {"的", "了", "是", "和"}, min_frequency=1, basic_min_share=0.2)
    (['的'], ['了', '是'])
    """
    stats = count_candidates(pairs, segment, candidates)
    return select_antecedents(
        stats,
        basic_ratio=basic_ratio,
        optimized_ratio=optimized_ratio,
        min_frequency=min_frequency,
        basic_min_share=basic_min_share,
    )


# ---------------------------------------------------------------------------------------------- pages
def decode_bytes(data: bytes) -> str:
    """Strict UTF-8 when the bytes are valid UTF-8, else GB18030 with replacement characters."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("gb18030", errors="replace")


def page_visible_text(html: bytes | str) -> str:
    """The visible text of a page: ``text_content()`` of its body without scripts and styles."""
    import lxml.html  # only antecedent learning parses HTML here

    text = decode_bytes(html) if isinstance(html, bytes) else html
    if not text.strip():
        return ""
    try:
        root = lxml.html.document_fromstring(text)
    except (ValueError, lxml.etree.ParserError):
        # lxml refuses str with an encoding declaration in some versions; bytes of the decoded text work.
        root = lxml.html.document_fromstring(text.encode("utf-8"), parser=lxml.html.HTMLParser(encoding="utf-8"))
    for element in root.xpath("//script | //style | //noscript | //template"):
        element.drop_tree()
    body = root.find("body")
    return (body if body is not None else root).text_content()


def find_page_pairs(patterns: Iterable[str]) -> tuple[list[tuple[Path, Path]], list[Path]]:
    """Resolve ``DIR_OR_GLOB`` arguments to (html, text) path pairs; also returns pages without a text.

    A directory holding ``original/`` and ``cleaned/`` is read CWCED-style (``original/<id>.html`` with
    ``cleaned/<id>.txt``); any other directory or glob yields HTML files whose text is ``<same name>.txt``.
    """
    pairs: list[tuple[Path, Path]] = []
    missing: list[Path] = []
    for pattern in patterns:
        path = Path(pattern).expanduser()
        if path.is_dir() and (path / "original").is_dir() and (path / "cleaned").is_dir():
            htmls = sorted(p for p in (path / "original").iterdir() if p.suffix.lower() in (".html", ".htm"))
            texts = {p.stem: p for p in (path / "cleaned").glob("*.txt")}
            for html in htmls:
                (pairs.append((html, texts[html.stem])) if html.stem in texts else missing.append(html))
            continue
        if path.is_dir():
            htmls = sorted(p for p in path.rglob("*") if p.suffix.lower() in (".html", ".htm"))
        elif path.is_file():
            htmls = [path]
        else:
            htmls = sorted(Path(p) for p in glob.glob(str(path), recursive=True) if Path(p).is_file())
            if not htmls:
                raise ValueError(f"{pattern!r} matches no page: give a directory, an HTML file or a glob")
        for html in htmls:
            text = html.with_suffix(".txt")
            (pairs.append((html, text)) if text.is_file() else missing.append(html))
    return pairs, missing


def read_page_pairs(paths: Iterable[tuple[Path, Path]]) -> Iterator[tuple[str, str]]:
    """Yield (page visible text, text layer) for (html path, text path) pairs."""
    for html, text in paths:
        yield page_visible_text(html.read_bytes()), decode_bytes(text.read_bytes())


# ---------------------------------------------------------------------------------------------- CLI
def _check_ratio(name: str, value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
        raise ValueError(f"{name} must be a ratio t1/t2 in [0, 1) (the paper: basic 0.6, optimized 0.9), got {value!r}")


def _default_segment(backend: str) -> Callable[[str], list[str]]:
    """The pipeline's tokenisation (normalise, then segment), so learned words match its tokens."""
    from newsdedup.text.normalize import normalize_text
    from newsdedup.text.segment import get_segmenter

    cut = get_segmenter(backend=backend).cut
    return lambda text: cut(normalize_text(text))


def _default_candidates(path: str | None) -> frozenset[str]:
    from newsdedup.text.stopwords import load_stopwords

    return load_stopwords(path)


def _write_list(path: Path, words: list[str], stats: AntecedentStats, header: list[str]) -> None:
    lines = [f"# {line}" if line else "#" for line in header]
    lines.append("# One antecedent a line; after '#': t1 (text layers), t2 (whole pages), t1/t2.")
    for word in words:
        lines.append(f"{word}\t# {stats.text[word]}\t{stats.page[word]}\t{stats.ratio(word):.3f}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="newsdedup antecedents",
        description="Learn SpotSigs antecedents (basic.txt, optimized.txt) from pages whose main text is known.",
    )
    parser.add_argument(
        "--pages",
        nargs="+",
        required=True,
        metavar="DIR_OR_GLOB",
        help="CWCED-style folders (original/*.html + cleaned/*.txt) or HTML files/globs with a .txt of the same name",
    )
    parser.add_argument("--out", required=True, metavar="DIR", help="folder to write basic.txt and optimized.txt to")
    parser.add_argument(
        "--stopwords", default=None, metavar="FILE", help="candidate stopword list (default: the packaged one)"
    )
    parser.add_argument("--segmenter", default=defaults.NEWSDEDUP_SEGMENTER, help="segmenter backend (default: %(default)s)")
    parser.add_argument(
        "--basic-ratio", type=float, default=0.6, help="t1/t2 above which a frequent word is basic (0.6)"
    )
    parser.add_argument(
        "--optimized-ratio", type=float, default=0.9, help="t1/t2 above which a word is optimized (0.9)"
    )
    parser.add_argument(
        "--min-frequency",
        type=int,
        default=DEFAULT_MIN_FREQUENCY,
        help=f"fewest text-layer occurrences of an optimized antecedent ({DEFAULT_MIN_FREQUENCY})",
    )
    parser.add_argument(
        "--basic-min-share",
        type=float,
        default=DEFAULT_BASIC_MIN_SHARE,
        help=f"share of all text-layer words a basic antecedent needs at least ({DEFAULT_BASIC_MIN_SHARE})",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    """``newsdedup antecedents``: learn and write the antecedent lists, print a summary; returns 0 or 2."""
    args = build_parser().parse_args(argv)
    try:
        _check_ratio("--basic-ratio", args.basic_ratio)
        _check_ratio("--optimized-ratio", args.optimized_ratio)
        if args.min_frequency < 1:
            raise ValueError("--min-frequency must be >= 1")
        if not 0 <= args.basic_min_share < 1:
            raise ValueError("--basic-min-share must be a share in [0, 1), e.g. 0.01 for one word in 100")
        paths, missing = find_page_pairs(args.pages)
        if not paths:
            raise ValueError("no page with a known text layer found: see --help for the layouts read")
        candidates = _default_candidates(args.stopwords)
        segment = _default_segment(args.segmenter)
    except ValueError as error:
        print(f"newsdedup antecedents: error: {error}", file=sys.stderr)
        return 2

    stats = count_candidates(read_page_pairs(paths), segment, candidates)
    basic, optimized = select_antecedents(
        stats,
        basic_ratio=args.basic_ratio,
        optimized_ratio=args.optimized_ratio,
        min_frequency=args.min_frequency,
        basic_min_share=args.basic_min_share,
    )
    sources = ", ".join(Path(p).name or str(p) for p in args.pages)
    header = [
        "SpotSigs antecedents learned by `newsdedup antecedents` (Li et al. 2017, section 3.3).",
        f"Learned from {stats.pages} pages with a known text layer ({sources}), segmenter {args.segmenter!r}:",
        f"{stats.text_words} text-layer words, {stats.page_words} whole-page words, "
        f"{len(candidates)} candidate stopwords.",
        "t1 = frequency in the text layers, t2 = frequency in the whole visible pages.",
        f"basic: t1/t2 > {args.basic_ratio} and t1 >= {args.basic_min_share:.2%} of text-layer words "
        f"({max(args.min_frequency, args.basic_min_share * stats.text_words):.0f}): {len(basic)} words.",
        f"optimized: t1/t2 > {args.optimized_ratio} and t1 >= {args.min_frequency}, not basic: {len(optimized)} words.",
        "load_antecedents('optimized') uses basic + optimized together, as the paper does.",
    ]
    out = Path(args.out).expanduser()
    out.mkdir(parents=True, exist_ok=True)
    _write_list(out / "basic.txt", basic, stats, header + ["", "This file: the basic antecedents."])
    _write_list(
        out / "optimized.txt", optimized, stats, header + ["", "This file: the optimized antecedents (not the basic ones)."]
    )

    print(f"pages read: {stats.pages} (skipped without a text layer: {len(missing)})")
    print("word\tt1\tt2\tt1/t2")
    for word in PAPER_BASIC:
        print(f"{word}\t{stats.text[word]}\t{stats.page[word]}\t{stats.ratio(word):.2f}")
    print(f"basic: {len(basic)} ({' '.join(basic)})")
    print(f"optimized: {len(optimized)}; total antecedents: {len(basic) + len(optimized)}")
    print(f"written: {out / 'basic.txt'}, {out / 'optimized.txt'}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
