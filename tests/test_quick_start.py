"""The README's first quick-start command, run for real as a new user runs it: a fresh venv, a plain install
(no extras), ``newsdedup demo``; in a copy of the checkout, so nothing installed for the tests can help it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import REPO_ROOT
from test_readme import quick_start_commands

OPTIONAL = ("redis", "scrapy_redis", "psycopg", "psycopg_pool", "matplotlib", "datasketch", "tqdm")


def checkout_copy(dest: Path) -> Path:
    """The files a clone of this checkout has (tracked, plus new files not ignored), copied to ``dest``."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO_ROOT,
                            capture_output=True, check=True).stdout.decode("utf-8").split("\0")
    for name in filter(None, listed):
        source = REPO_ROOT / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    return dest


def test_the_first_quick_start_command_installs_without_extras_and_runs_the_demo(tmp_path):
    command = quick_start_commands()[0]
    repo = checkout_copy(tmp_path / "newsdedup")
    # The user's shell: no venv of ours active, no PYTHONPATH; python3 is the interpreter running the tests.
    env = {key: value for key, value in os.environ.items() if key not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    base = Path(getattr(sys, "_base_executable", sys.executable)).resolve().parent
    env["PATH"] = os.pathsep.join([str(base), *(p for p in env.get("PATH", "").split(os.pathsep)
                                                if not p.startswith(sys.prefix))])
    result = subprocess.run(["bash", "-c", command], cwd=repo, env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, f"{command}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    assert "Traceback" not in result.stderr
    assert result.stdout.count("newsdedup run finished: exit status 0 (ok)") == 2
    assert "14 stories" in result.stdout
    # A plain install: none of the extras' packages are there (so none can have been imported).
    venv_python = repo / ".venv" / "bin" / "python"
    present = subprocess.run([venv_python, "-c", "import importlib.util, sys; print(' '.join(n for n in sys.argv[1:] "
                              "if importlib.util.find_spec(n)))", *OPTIONAL], capture_output=True, text=True, check=True)
    assert present.stdout.split() == []
