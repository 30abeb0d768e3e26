"""The documentation site builds with ``mkdocs build --strict`` (a broken link or anchor, a page left out of the
navigation or an API page whose module moved fails it), and its generated pages show what the code has."""

from __future__ import annotations

import html as html_lib
import os
import re
import subprocess
import sys

import pytest

from conftest import REPO_ROOT, docs_hook

from newsdedup import defaults
from newsdedup.storage.sql import SCHEMA_VERSION


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    pytest.importorskip("mkdocs", reason="the docs extra: pip install -e '.[docs]'")
    pytest.importorskip("material", reason="the docs extra: pip install -e '.[docs]'")
    out = tmp_path_factory.mktemp("site")
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
                            cwd=REPO_ROOT, capture_output=True, text=True, timeout=300,
                            env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert result.returncode == 0, result.stderr[-3000:]
    return out


def page(site, name: str) -> str:
    return (site / name / "index.html").read_text(encoding="utf-8")


def html_text(html: str) -> str:
    """The text of a page, without the tags syntax highlighting puts between words."""
    return html_lib.unescape(re.sub(r"<[^>]+>", "", html))


def test_settings_page_lists_every_setting_with_its_default(site):
    html = page(site, "settings")
    names = [name for name in vars(defaults) if name.startswith("NEWSDEDUP_")]
    assert [name for name in names if f"<code>{name}</code>" not in html] == []
    assert '"sqlite:///newsdedup.sqlite"' in html_text(html)


def test_storage_page_shows_the_schema_the_store_runs(site):
    html = html_text(page(site, "storage"))
    assert "CREATE TABLE IF NOT EXISTS articles" in html and "CREATE TABLE IF NOT EXISTS clusters" in html
    assert f"The schema version is {SCHEMA_VERSION}." in html


def test_api_reference_renders_the_docstrings(site):
    html = page(site, "api")
    assert "SpotSigsIndex" in html and "open_store" in html and "extract_article" in html


def test_api_reference_opens_with_the_library(site):
    """``newsdedup.Deduplicator`` (its parameters, its verdict's fields) and ``newsdedup.extract_article`` come first."""
    html = page(site, "api")
    library = html.index('id="newsdedup.Deduplicator"')
    assert max(library, html.index('id="newsdedup.extract_article"')) < html.index('id="newsdedup.dedup.engine"')
    assert 'id="newsdedup.Verdict.similarity"' in html
    assert "spotsigs_tau" in html_text(html[library:html.index('id="newsdedup.Verdict"')])


def test_docstring_examples_and_roles_become_markdown():
    from test_readme import docs_hook

    text = "Use :func:`~a.b.run` or :class:`a.B`.\n\n    >>> run()\n    1\n\nDone."
    assert docs_hook("griffe_docstrings").markdown_docstring(text) == (
        "Use `run` or `a.B`.\n\n```pycon\n    >>> run()\n    1\n```\n\nDone.")


def test_the_generated_regions_of_the_pages_are_current():
    """docs/settings.md's settings table and docs/storage.md's schema and version, written into the files (GitHub
    shows them as they are), match what the code makes now: `python docs/hooks/regions.py` rewrites them."""
    regions = docs_hook("regions")
    assert regions.stale() == [], "run python docs/hooks/regions.py"
    storage = (REPO_ROOT / "docs" / "storage.md").read_text(encoding="utf-8")
    assert f"The schema version is <!-- schema-version -->{SCHEMA_VERSION}<!-- /schema-version -->." in storage
    settings = (REPO_ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    names = [name for name in vars(defaults) if name.startswith("NEWSDEDUP_")]
    assert [name for name in names if f"| `{name}` |" not in settings] == []
    # A stale region is seen: the check is not vacuous.
    assert regions.fill(storage, "schema-version", "0") != storage
