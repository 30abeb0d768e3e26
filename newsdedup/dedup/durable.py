"""Files that survive ``kill -9`` and power cuts whole or not at all: a persisted index's building blocks."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO


def write_durably(path: Path, write: Callable[[BinaryIO], object]) -> None:
    """Write ``path`` through ``write(handle)`` so that a reader sees the old file or the new one, never a torn
    one: into a temporary file beside it, flushed to disk (fsync), then renamed over it (atomic on POSIX)."""
    temporary = path.with_name(path.name + ".tmp")
    with open(temporary, "wb") as handle:
        write(handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)


def fsync_folder(folder: Path, *, files: bool = False) -> None:
    """Make the folder's entries (files created, renamed, removed in it) durable; ``files``: its files' contents too."""
    if files:
        for child in folder.iterdir():
            with open(child, "rb") as handle:
                os.fsync(handle.fileno())
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
