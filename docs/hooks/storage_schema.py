"""docs/storage.md's schema listing and schema version, generated from the SQL the store runs.

``docs/hooks/regions.py`` writes the SQLite schema (``newsdedup.storage.sqlite.SCHEMA``, the same ``CREATE TABLE``
statements PostgreSQL gets with its own column types) and the schema version into the page's regions, so the page
reads the same on GitHub and cannot drift from the code (tests/test_docs.py fails when it is stale).
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def _import_path() -> None:
    if str(REPO_ROOT) not in sys.path:  # a build from a checkout without `pip install -e .`
        sys.path.insert(0, str(REPO_ROOT))


def storage_schema() -> str:
    _import_path()
    from newsdedup.storage.sqlite import SCHEMA

    return "```sql\n" + SCHEMA.strip() + "\n```\n"


def schema_version() -> str:
    _import_path()
    from newsdedup.storage.sql import SCHEMA_VERSION

    return str(SCHEMA_VERSION)

