"""newsdedup: crawl Chinese news portals and deduplicate their articles inline; the same work as a library.

>>> import newsdedup
>>> verdict = newsdedup.Deduplicator().add("新华社北京11月9日电 国家统计局发布数据。", id=1)
>>> verdict.status
'unique'

:func:`extract_article` and :class:`Deduplicator` are documented in :mod:`newsdedup.api`. They are loaded on first
use: ``import newsdedup`` itself loads neither the extraction nor the dedup stack (nor Scrapy).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what type checkers and the API reference see; at run time __getattr__ loads them
    from newsdedup.api import Article, Deduplicator, DocumentId, SkipPage, Verdict, extract_article

__all__ = ["Article", "Deduplicator", "DocumentId", "SkipPage", "Verdict", "extract_article"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        value = getattr(importlib.import_module("newsdedup.api"), name)
        globals()[name] = value  # looked up once
        return value
    raise AttributeError(f"module 'newsdedup' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
