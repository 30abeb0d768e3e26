"""The generated parts of the documentation pages, written into the Markdown files themselves.

A region is the text between ``<!-- NAME -->`` and ``<!-- /NAME -->`` in a page; what it holds is made from the code
(docs/settings.md's settings reference from ``newsdedup/defaults.py``, docs/storage.md's schema and schema version
from the store), so the pages read the same on GitHub as on the built site. After changing a default, its comment
or the schema::

    python docs/hooks/regions.py            # rewrites the stale regions
    python docs/hooks/regions.py --check    # exit status 1 when one is stale (tests/test_docs.py checks the same)
"""

from __future__ import annotations

import importlib.util
import re
import sys
from collections.abc import Callable
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
HOOKS = Path(__file__).resolve().parent


def _sibling(name: str):
    """A module of this folder (MkDocs hooks are files, not a package)."""
    spec = importlib.util.spec_from_file_location(f"docs_hook_{name}", HOOKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # a dataclass of the module looks its module up there
    spec.loader.exec_module(module)
    return module


def generators() -> dict[str, dict[str, Callable[[], str]]]:
    """page (relative to the repository) -> region name -> what makes its text."""
    settings, storage = _sibling("settings_reference"), _sibling("storage_schema")
    block = lambda make: lambda: "\n\n" + make().strip("\n") + "\n\n"  # noqa: E731 - a table needs blank lines round it
    return {
        "docs/settings.md": {"settings-reference": block(settings.settings_reference)},
        "docs/storage.md": {"schema-version": storage.schema_version, "storage-schema": block(storage.storage_schema)},
    }


def fill(text: str, name: str, content: str, *, page: str = "<page>") -> str:
    """``text`` with region ``name`` holding ``content``; ValueError when the page lacks the region's two markers."""
    pattern = re.compile(rf"(<!-- {re.escape(name)} -->)(.*?)(<!-- /{re.escape(name)} -->)", re.DOTALL)
    if len(pattern.findall(text)) != 1:
        raise ValueError(f"{page}: needs one region <!-- {name} --> ... <!-- /{name} -->")
    return pattern.sub(lambda match: match.group(1) + content + match.group(3), text)


def stale() -> list[str]:
    """The pages whose generated regions differ from what the code makes now."""
    found = []
    for page, regions in generators().items():
        text = (REPO_ROOT / page).read_text(encoding="utf-8")
        current = text
        for name, make in regions.items():
            current = fill(current, name, make(), page=page)
        if current != text:
            found.append(page)
    return found


def write() -> list[str]:
    """Rewrite the stale pages; returns them."""
    written = stale()
    for page in written:
        path = REPO_ROOT / page
        text = path.read_text(encoding="utf-8")
        for name, make in generators()[page].items():
            text = fill(text, name, make(), page=page)
        path.write_text(text, encoding="utf-8")
    return written


def main(argv: list[str]) -> int:
    if argv == ["--check"]:
        pages = stale()
        for page in pages:
            print(f"{page}: a generated region is stale; run python docs/hooks/regions.py", file=sys.stderr)
        return 1 if pages else 0
    if argv:
        print("usage: python docs/hooks/regions.py [--check]", file=sys.stderr)
        return 2
    for page in write():
        print(f"rewrote {page}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
