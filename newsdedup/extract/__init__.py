"""Article extraction: decode HTML bytes, strip related-reading and other boilerplate, trafilatura, metadata.

The spider's pipelines call :func:`extract_article` (in a process pool) and :func:`decode_html`.
"""

from __future__ import annotations

from newsdedup.extract.decode import DecodedPage, decode_html
from newsdedup.extract.extractor import SKIP_REASONS, Article, SkipPage, extract_article
from newsdedup.extract.metadata import PageMetadata, extract_metadata, normalize_datetime
from newsdedup.extract.related import RELATED_HEADINGS, is_related_heading, remove_boilerplate

__all__ = [
    "Article",
    "DecodedPage",
    "PageMetadata",
    "RELATED_HEADINGS",
    "SKIP_REASONS",
    "SkipPage",
    "decode_html",
    "extract_article",
    "extract_metadata",
    "is_related_heading",
    "normalize_datetime",
    "remove_boilerplate",
]
