"""Stopword lists: the packaged default (``config/stopwords.txt``) or a file of your own.

>>> stopwords = load_stopwords()
>>> "的" in stopwords and "责任编辑" in stopwords and "新闻" in stopwords
True
"""

from __future__ import annotations

import functools
import importlib.resources
import os
import unicodedata

__all__ = ["DEFAULT_STOPWORDS_RESOURCE", "load_stopwords", "parse_stopwords"]

DEFAULT_STOPWORDS_RESOURCE = "stopwords.txt"  # inside the package newsdedup.config (config/ in the repo)


def parse_stopwords(text: str) -> frozenset[str]:
    """Stopwords from the text of a list: one per line, ``#`` starts a comment line, blank lines ignored.

    Each word is kept as written and also in NFKC, lower-cased form, so full-width and upper-case spellings
    in the list match normalised, lower-cased tokens.

    >>> sorted(parse_stopwords("# comment\\n的\\n\\n  ＴＨＥ \\n"))
    ['the', '的', 'ＴＨＥ']
    """
    words: set[str] = set()
    for line in text.splitlines():
        word = line.strip()
        if not word or word.startswith("#"):
            continue
        words.add(word)
        words.add(unicodedata.normalize("NFKC", word).lower())
    return frozenset(words)


@functools.cache
def _packaged_stopwords() -> frozenset[str]:
    resource = importlib.resources.files("newsdedup.config") / DEFAULT_STOPWORDS_RESOURCE
    return parse_stopwords(resource.read_text(encoding="utf-8-sig"))


def load_stopwords(path: str | os.PathLike[str] | None = None) -> frozenset[str]:
    """Load a stopword list; ``None`` loads the packaged default (read once per process).

    ``path``: a UTF-8 text file in the format of :func:`parse_stopwords`.
    """
    if path is None:
        return _packaged_stopwords()
    file_path = os.fspath(path)
    if not os.path.isfile(file_path):
        raise ValueError(f"stopword file {file_path!r} not found; pass an existing path, or None for the default")
    with open(file_path, encoding="utf-8-sig") as handle:
        return parse_stopwords(handle.read())
