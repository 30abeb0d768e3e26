"""A Python process as a plain ``pip install newsdedup`` (no extras) has it: the extras' packages cannot be imported.

Put this folder on ``PYTHONPATH`` (tests/test_plain_install.py does): Python imports ``sitecustomize`` at start-up,
in every process, so the crawl's workers and the crawls ``newsdedup monitor`` starts are covered too. The names in
``NEWSDEDUP_BLOCK_MODULES`` (comma-separated top-level modules) raise ModuleNotFoundError as if not installed,
and each attempt is appended to the file ``NEWSDEDUP_BLOCK_LOG`` with where it came from, so a test sees an
import that code caught and went on without.
"""

import os
import sys

_BLOCKED = frozenset(name for name in os.environ.get("NEWSDEDUP_BLOCK_MODULES", "").split(",") if name)
_LOG = os.environ.get("NEWSDEDUP_BLOCK_LOG")


def _importer() -> str:
    """The first frame outside the import machinery: the line that asked for the module."""
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename.startswith("<frozen importlib"):
        frame = frame.f_back
    return "?" if frame is None else f"{frame.f_code.co_filename}:{frame.f_lineno}"


class _BlockExtras:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] not in _BLOCKED:
            return None
        if _LOG:
            with open(_LOG, "a", encoding="utf-8") as log:
                log.write(f"{name} from {_importer()} (pid {os.getpid()}, {' '.join(sys.argv)[:200]})\n")
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)


if _BLOCKED:
    sys.meta_path.insert(0, _BlockExtras())
