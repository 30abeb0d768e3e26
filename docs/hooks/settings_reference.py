"""The settings reference of docs/settings.md, generated from the defaults module.

The defaults module (``newsdedup/defaults.py``) is the one place a ``NEWSDEDUP_*`` default is written. Its
comments are the descriptions: a ``# -- Heading --`` line starts a group, and the comment lines directly above a
setting, with one beside it, describe that setting. ``docs/hooks/regions.py`` writes the table into docs/settings.md
(between its ``settings-reference`` markers), so GitHub shows it too, and tests/test_docs.py fails when it is stale;
``tests/test_readme.py`` checks it covers every setting the module defines.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass
from pathlib import Path

MARKER = "<!-- settings-reference -->"  # the region's start (docs/hooks/regions.py)
DEFAULTS_MODULE = Path(__file__).resolve().parents[2] / "newsdedup" / "defaults.py"
PREFIX = "NEWSDEDUP_"
HEADING = re.compile(r"^--\s*(.+?)\s*--$")


@dataclass(frozen=True)
class Setting:
    group: str
    name: str
    default: str  # the value as written in the module
    description: str


def read_settings(path: Path = DEFAULTS_MODULE) -> list[Setting]:
    """Every ``NEWSDEDUP_*`` assignment of the module at ``path``, in order, with its group and description."""
    source = path.read_text(encoding="utf-8")
    comments: dict[int, tuple[str, bool]] = {}  # line -> (text, whole line)
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            whole_line = not token.line[: token.start[1]].strip()
            comments[token.start[0]] = (token.string.lstrip("#").strip(), whole_line)
    headings = sorted((line, HEADING.match(text).group(1)) for line, (text, whole) in comments.items()
                      if whole and HEADING.match(text))
    settings = []
    for node in ast.parse(source).body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id.startswith(PREFIX)):
            continue
        above = []
        line = node.lineno - 1
        while line in comments and comments[line][1] and not HEADING.match(comments[line][0]):
            above.insert(0, comments[line][0])
            line -= 1
        beside = comments.get(node.end_lineno)
        if beside and not beside[1]:
            above.append(beside[0])
        group = next((name for heading_line, name in reversed(headings) if heading_line < node.lineno), "")
        settings.append(Setting(group, node.targets[0].id, ast.get_source_segment(source, node.value),
                                " ".join(above)))
    return settings


def settings_reference(path: Path = DEFAULTS_MODULE) -> str:
    """Markdown: one ``###`` section a group, each a table of setting, default and description."""
    out = []
    group = None
    for setting in read_settings(path):
        if setting.group != group:
            group = setting.group
            out += ["", f"### {group}", "", "| setting | default | what |", "| --- | --- | --- |"]
        description = setting.description.replace("|", "\\|")
        out.append(f"| `{setting.name}` | `{setting.default}` | {description} |")
    return "\n".join(out).lstrip("\n") + "\n"

