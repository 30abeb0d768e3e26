"""CI runs every test: a skip fails where ``CI`` is set, and ``.ci/run`` sets it for the README's test command."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from conftest import REPO_ROOT
from test_readme import quick_start_commands

SKIPPING = """
import pytest

def test_needs_the_data(shared_data):
    pass

def test_skips_itself():
    pytest.skip("not here")
"""


def _pytest(folder, **env) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if k != "CI"}
    environment.update(env, NEWSDEDUP_SHARED_DATA=str(folder / "no-such-data"))
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(folder)],
                          cwd=folder, env=environment, capture_output=True, text=True, timeout=120)


def test_skips_fail_under_ci_and_only_there(tmp_path):
    shutil.copy(REPO_ROOT / "tests" / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "test_skipping.py").write_text(SKIPPING, encoding="utf-8")
    outside = _pytest(tmp_path)
    assert outside.returncode == 0 and "2 skipped" in outside.stdout, outside.stdout
    inside = _pytest(tmp_path, CI="true")
    assert inside.returncode == 1, inside.stdout
    assert "skipped while CI is set" in inside.stdout and "shared test data not found" in inside.stdout
    assert "skipped" not in inside.stdout.splitlines()[-1]  # the summary line: 1 failed, 1 error


def test_ci_script_sets_ci_before_the_readme_test_command():
    script = (REPO_ROOT / ".ci" / "run").read_text(encoding="utf-8")
    command = quick_start_commands()[1]
    assert "export CI=1" in script and script.index("export CI=1") < script.index(command)
