"""docs/storage.md's schema listing, generated at build time from the SQL the store runs.

The marker line in the page becomes the SQLite schema (``newsdedup.storage.sqlite.SCHEMA``, the same
``CREATE TABLE`` statements PostgreSQL gets with its own column types), and the version marker the schema version, so the page cannot drift from the code.
"""

from __future__ import annotations

import sys
from pathlib import Path

MARKER = "<!-- storage-schema -->"
VERSION_MARKER = "<!-- schema-version -->"
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


def on_page_markdown(markdown: str, page, config, files) -> str:  # noqa: ARG001 (MkDocs hook signature)
    if MARKER in markdown:
        markdown = markdown.replace(MARKER, storage_schema())
    if VERSION_MARKER in markdown:
        markdown = markdown.replace(VERSION_MARKER, schema_version())
    return markdown
