"""What both read-only stores check on opening: a newsdedup database of this version or an older one."""

from __future__ import annotations

from newsdedup.storage.base import StoreError
from newsdedup.storage.sql import SCHEMA_VERSION


def check_version(name: str, value: str | None) -> None:
    if value is None or not str(value).isdigit():
        raise StoreError(f"{name} is not a newsdedup database (no schema version); point --storage at a crawl's")
    if int(value) > SCHEMA_VERSION:
        raise StoreError(f"{name} has schema version {value}, newer than this newsdedup's {SCHEMA_VERSION}: "
                         "upgrade newsdedup (pip install -U 'newsdedup[serve]')")
