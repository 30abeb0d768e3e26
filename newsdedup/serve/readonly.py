"""What both read-only stores check on opening: a newsdedup database of this version or an older one."""

from __future__ import annotations

from newsdedup.storage.base import StoreError
from newsdedup.storage.sql import SCHEMA_VERSION

# The oldest schema the desk reads as it is: 6 has every table it reads (reuses); without 7's search index its
# search reads every article.
OLDEST_READ = 6


def check_version(name: str, value: str | None) -> None:
    if value is None or not str(value).isdigit():
        raise StoreError(f"{name} is not a newsdedup database (no schema version); point --storage at a crawl's")
    if int(value) < OLDEST_READ:
        raise StoreError(f"{name} has schema version {value}, older than the desk reads ({OLDEST_READ}): open it once "
                         "with this newsdedup's crawl or `newsdedup failures --storage URI`, which migrate it")
    if int(value) > SCHEMA_VERSION:
        raise StoreError(f"{name} has schema version {value}, newer than this newsdedup's {SCHEMA_VERSION}: "
                         "upgrade newsdedup (pip install -U 'newsdedup[serve]')")
