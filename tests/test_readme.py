"""The README's promises that CI and users rely on."""

from __future__ import annotations

import re

from conftest import REPO_ROOT


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
    ci_script = (REPO_ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert quick_start_commands()[1] in ci_script


def test_every_newsdedup_setting_is_documented():
    settings = (REPO_ROOT / "newsdedup" / "settings.py").read_text(encoding="utf-8")
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    names = re.findall(r"^(NEWSDEDUP_[A-Z_]+)\s*=", settings, flags=re.M)
    assert names, "no NEWSDEDUP settings found"
    assert [n for n in names if f"`{n}`" not in readme] == []
