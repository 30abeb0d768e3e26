"""The README's promises that CI and users rely on, and the settings reference that replaced its settings table."""

from __future__ import annotations

import ast
import re

from conftest import REPO_ROOT, docs_hook

from newsdedup import defaults


def quick_start_commands() -> list[str]:
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    quick_start = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.+?)\n```", quick_start)


def test_quick_start_has_exactly_two_commands_demo_and_tests():
    commands = quick_start_commands()
    assert len(commands) == 2
    demo, tests = commands
    assert demo.endswith("newsdedup demo") and "pytest" in tests


def test_ci_runs_the_readme_test_command():
    """The README's test command is a whole line of .ci/run, as written: not in a comment, nothing appended or put
    before it (a -k or --deselect there would have CI run less than a user runs)."""
    ci_lines = [line.strip() for line in (REPO_ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()]
    command = quick_start_commands()[1]
    assert ci_lines.count(command) == 1, command
    assert [line for line in ci_lines if "pytest" in line and not line.startswith("#")] == [command]


def test_readme_stays_a_front_page():
    """Reference material goes to the docs site; the README keeps what a newcomer reads first."""
    lines = (REPO_ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) < 200


def test_every_newsdedup_setting_is_documented():
    """The generated settings reference (docs/settings.md at build time) lists every NEWSDEDUP_* setting the
    defaults module defines, with its default as the module has it and a description from its comments."""
    hook = docs_hook("settings_reference")
    defined = [name for name in vars(defaults) if name.startswith("NEWSDEDUP_")]
    assert len(defined) > 40
    rows = hook.read_settings()
    assert sorted(row.name for row in rows) == sorted(defined)
    assert [row.name for row in rows if len(row.description) < 20] == []  # a sentence, not a stray word
    assert [row.name for row in rows if ast.literal_eval(row.default) != getattr(defaults, row.name)] == []
    assert [row.name for row in rows if not row.group] == []
    table = hook.settings_reference()
    assert [name for name in defined if f"| `{name}` |" not in table] == []
    assert hook.MARKER in (REPO_ROOT / "docs" / "settings.md").read_text(encoding="utf-8")


def test_settings_reference_reads_the_comments_of_each_setting(tmp_path):
    module = tmp_path / "defaults.py"
    module.write_text(
        "OTHER = 1\n"
        "# -- Storage --\n\n"
        "# Where articles go:\n# a URI.\n"
        "NEWSDEDUP_STORAGE_URI = 'sqlite:///x.sqlite'\n"
        "NEWSDEDUP_BATCH = 100  # records per transaction\n\n"
        "# -- Near --\n"
        "# A comment a blank line away describes nothing.\n\n"
        "NEWSDEDUP_TAU = 0.5\n", encoding="utf-8")
    rows = docs_hook("settings_reference").read_settings(module)
    assert [(row.group, row.name, row.default, row.description) for row in rows] == [
        ("Storage", "NEWSDEDUP_STORAGE_URI", "'sqlite:///x.sqlite'", "Where articles go: a URI."),
        ("Storage", "NEWSDEDUP_BATCH", "100", "records per transaction"),
        ("Near", "NEWSDEDUP_TAU", "0.5", ""),
    ]
