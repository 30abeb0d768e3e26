"""Chinese word segmentation behind one interface with two interchangeable backends.

``jieba`` (pure Python) is the reference. ``rjieba`` binds jieba-rs (Rust) and is about 14x faster on
whole news articles. Out of the box the two split some text differently, in two places only:

* jieba treats only ``[\\u4E00-\\u9FD5a-zA-Z0-9+#&._%-]`` runs as segmentable text and emits every other
  non-space character alone; jieba-rs also treats CJK Extension A/B.. and compatibility ideographs
  (``㐀``, ``豈``) as Chinese and may join them.
* inside a run, jieba splits Latin/digit words that are not dictionary words at ``.`` and ``-``
  (``EXO-CBX`` -> ``EXO - CBX``, ``2018.10.30`` -> ``2018.10 . 30``); jieba-rs keeps them whole.

The rjieba backend here therefore splits the text into jieba's runs itself and re-splits non-dictionary
Latin tokens with jieba's own rule, which makes it token-for-token equal to jieba (precise mode, HMM on)
on all 9,054 texts of the shared Sina corpus (see ``tests/test_text_segment_data.py``).

>>> get_segmenter("jieba").cut("我来到北京清华大学")
['我', '来到', '北京', '清华大学']
"""

from __future__ import annotations

import functools
import importlib.util
import logging
import os
import re
from typing import Protocol

__all__ = ["BACKENDS", "Segmenter", "get_segmenter"]

BACKENDS = ("auto", "jieba", "rjieba")

# jieba 0.42.1's own patterns (jieba/__init__.py and jieba/finalseg/__init__.py), copied so that the rjieba
# backend cuts the text at exactly the places jieba does.
_JIEBA_RUN = re.compile("([\u4E00-\u9FD5a-zA-Z0-9+#&\\._%\\-]+)")
_JIEBA_HAN = re.compile("[\u4E00-\u9FD5]")
_JIEBA_FINALSEG_SKIP = re.compile(r"([a-zA-Z0-9]+(?:\.\d+)?%?)")
# Ideographs jieba-rs segments as Chinese but jieba does not (CJK Ext. A, U+9FD6.., compatibility ideographs,
# planes 2-3): jieba-rs's RE_HAN_DEFAULT, widened to the whole of planes 2-3 for future extensions.
_JIEBA_RS_ONLY_HAN = re.compile("[\u3400-\u4DBF\u9FD6-\u9FFF\uF900-\uFAFF\U00020000-\U0003FFFF]")
# jieba's user dictionary line format: "word [freq] [tag]".
_JIEBA_USERDICT_LINE = re.compile("^(.+?)( [0-9]+)?( [a-z]+)?$")


class _Backend(Protocol):
    def cut(self, text: str) -> list[str]: ...


class _JiebaBackend:
    """jieba's precise mode with HMM, on a private Tokenizer (a user dictionary must not leak into others)."""

    def __init__(self, user_dict: str | None) -> None:
        import jieba

        # jieba logs "Building prefix dict ..." to stderr at DEBUG on every dictionary load.
        jieba.setLogLevel(logging.WARNING)
        self._tokenizer = jieba.Tokenizer()
        self._tokenizer.initialize()
        if user_dict is not None:
            self._tokenizer.load_userdict(user_dict)

    def cut(self, text: str) -> list[str]:
        return self._tokenizer.lcut(text, cut_all=False, HMM=True)


class _RjiebaBackend:
    """rjieba (jieba-rs) made to split exactly like jieba: see the module docstring."""

    def __init__(self, user_dict: str | None) -> None:
        import rjieba

        self._jieba = rjieba.Jieba()
        if user_dict is not None:
            _load_user_dict_into(self._jieba, user_dict)

    def cut(self, text: str) -> list[str]:
        tokens: list[str] = []
        if not _JIEBA_RS_ONLY_HAN.search(text):
            # Without those ideographs both libraries cut the text into the same runs: one call (the common
            # case, ~1.4x faster than a call per run).
            self._cut_run(text, tokens)
            return tokens
        # re.split with one group alternates: even items lie between runs, odd items are runs.
        for index, piece in enumerate(_JIEBA_RUN.split(text)):
            if not piece:
                continue
            if index % 2 == 0:
                # jieba emits every character outside its runs on its own (whitespace included).
                tokens.extend(piece)
            else:
                self._cut_run(piece, tokens)
        return tokens

    def _cut_run(self, text: str, tokens: list[str]) -> None:
        has_word = self._jieba.has_word
        for token in self._jieba.cut(text, hmm=True):
            if len(token) > 1 and not token.isalnum() and not _JIEBA_HAN.search(token) and not has_word(token):
                # jieba's HMM stage (finalseg) splits a non-dictionary Latin run this way.
                tokens.extend(part for part in _JIEBA_FINALSEG_SKIP.split(token) if part)
            else:
                tokens.append(token)


def _load_user_dict_into(jieba_rs: object, path: str) -> None:
    """Add a jieba-format user dictionary (UTF-8, ``word [freq] [tag]`` per line) to an rjieba instance."""
    with open(path, encoding="utf-8-sig") as lines:
        for line in lines:
            line = line.strip()
            if not line:
                continue
            word, freq, tag = _JIEBA_USERDICT_LINE.match(line).groups()  # type: ignore[union-attr]
            jieba_rs.add_word(  # type: ignore[attr-defined]
                word, int(freq) if freq is not None else None, tag.strip() if tag is not None else None
            )


def _rjieba_available() -> bool:
    return importlib.util.find_spec("rjieba") is not None


class Segmenter:
    """Word segmenter: ``cut(text)`` returns jieba precise-mode tokens without whitespace-only tokens.

    backend:
        ``"jieba"``: the reference implementation.
        ``"rjieba"``: jieba-rs, ~14x faster on whole articles, token-equal to jieba on the shared corpus. With a
        user dictionary its entries are added with ``add_word``; token equality with jieba is not proven
        for user dictionaries (entries without a frequency get one computed by jieba-rs).
        ``"auto"``: rjieba when it is importable and no user dictionary is given, else jieba.
    user_dict: path of a jieba-format user dictionary (UTF-8, ``word [freq] [tag]`` per line), or None.

    Construction loads the dictionary (0.1-1 s): share instances through :func:`get_segmenter`.

    >>> Segmenter("rjieba").cut("他说： 清华大学  AT&T")
    ['他', '说', '：', '清华大学', 'AT&T']
    """

    def __init__(self, backend: str = "auto", user_dict: str | os.PathLike[str] | None = None) -> None:
        if backend not in BACKENDS:
            raise ValueError(f"unknown segmenter backend {backend!r}; use one of {', '.join(BACKENDS)}")
        user_dict_path = os.fspath(user_dict) if user_dict is not None else None
        if user_dict_path is not None and not os.path.isfile(user_dict_path):
            raise ValueError(f"user dictionary {user_dict_path!r} is not a file; pass an existing path or None")
        if backend == "auto":
            backend = "rjieba" if user_dict_path is None and _rjieba_available() else "jieba"
        if backend == "rjieba" and not _rjieba_available():
            raise ValueError("backend 'rjieba' needs the rjieba package: pip install rjieba, or use 'jieba'")
        self.backend_name: str = backend
        self.user_dict: str | None = user_dict_path
        self._backend: _Backend = (
            _RjiebaBackend(user_dict_path) if backend == "rjieba" else _JiebaBackend(user_dict_path)
        )

    def cut(self, text: str) -> list[str]:
        """Segment ``text`` into words (precise mode, HMM for unknown words); whitespace tokens are dropped."""
        if not isinstance(text, str):
            raise ValueError(f"Segmenter.cut expects str, got {type(text).__name__}; decode bytes first")
        return [token for token in self._backend.cut(text) if not token.isspace()]

    def __repr__(self) -> str:
        return f"Segmenter(backend={self.backend_name!r}, user_dict={self.user_dict!r})"

    def __reduce__(self) -> tuple[object, tuple[str, str | None]]:
        # The backends hold native/locked objects; a copy sent to a worker process rebuilds its own.
        return (get_segmenter, (self.backend_name, self.user_dict))


@functools.cache
def _cached_segmenter(backend: str, user_dict: str | None) -> Segmenter:
    return Segmenter(backend, user_dict)


def get_segmenter(backend: str = "auto", user_dict: str | os.PathLike[str] | None = None) -> Segmenter:
    """The process-wide :class:`Segmenter` for these arguments (the dictionary is loaded once)."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown segmenter backend {backend!r}; use one of {', '.join(BACKENDS)}")
    user_dict_path = os.path.abspath(os.fspath(user_dict)) if user_dict is not None else None
    return _cached_segmenter(backend, user_dict_path)
