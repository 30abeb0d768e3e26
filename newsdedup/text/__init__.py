"""Text preparation, pure ``str -> str / tokens / ints``: normalisation, segmentation, stopwords, hashing.

Importing this package is cheap: segmenter dictionaries load when a Segmenter is first built.
"""

from __future__ import annotations

from newsdedup.text.hashing import from_signed64, hash64, hash128, text_fingerprint, to_signed64
from newsdedup.text.normalize import normalize_text
from newsdedup.text.segment import Segmenter, get_segmenter
from newsdedup.text.stopwords import load_stopwords

__all__ = [
    "Segmenter",
    "from_signed64",
    "get_segmenter",
    "hash64",
    "hash128",
    "load_stopwords",
    "normalize_text",
    "text_fingerprint",
    "to_signed64",
]
