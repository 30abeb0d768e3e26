"""A Griffe extension (mkdocs.yml, mkdocstrings' ``extensions``) that lets the API reference render the project's
reST-flavoured docstrings as Markdown: doctest examples become ``pycon`` code blocks (Markdown would read ``>>>`` as
a quote three deep), and Sphinx roles such as ``:func:`~pkg.mod.name``` become inline code (the name alone after
``~``, as Sphinx shows it). The docstrings themselves stay as they are, for ``help()`` and the doctests."""

from __future__ import annotations

import re

import griffe

ROLE = re.compile(r":(?:py:)?(?:func|class|meth|mod|data|attr|exc|obj|const):`(~?)([^`]+)`")


def _role(match: re.Match[str]) -> str:
    name = match.group(2).strip()
    return f"`{name.rsplit('.', 1)[-1] if match.group(1) else name}`"


def markdown_docstring(text: str) -> str:
    """``text`` with its doctest blocks (from a ``>>>`` line to the next blank line) fenced, and its Sphinx roles as
    inline code (tests/test_docs.py has an example)."""
    out: list[str] = []
    in_example = False
    for line in ROLE.sub(_role, text).splitlines():
        starts = line.lstrip().startswith(">>>")
        if starts and not in_example:
            out.append("```pycon")
            in_example = True
        elif in_example and not line.strip():
            out.append("```")
            in_example = False
        out.append(line)
    if in_example:
        out.append("```")
    return "\n".join(out)


class MarkdownDocstrings(griffe.Extension):
    def on_instance(self, *, obj: griffe.Object, **kwargs) -> None:  # noqa: ARG002 (Griffe's hook signature)
        if obj.docstring is not None:
            obj.docstring.value = markdown_docstring(obj.docstring.value)
