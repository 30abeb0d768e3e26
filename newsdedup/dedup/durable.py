"""Files that survive ``kill -9`` and power cuts whole or not at all, that are never trusted when damaged, and a
folder only one process writes: a persisted index's building blocks.

Checksums
    Every file of a persisted state is listed, with the checksum of its bytes (xxHash's XXH3-128: 15-18 GB/s in
    memory here, 5 times zlib's CRC-32 and 29 times BLAKE2b; 5.4 GB/s read from the page cache, so about 0.2 s a
    GB at a crawl's start: ``benchmarks/state_verify.py``), in the manifest that makes it part of the state;
    the manifest carries the checksum of its own content (:func:`write_manifest`). The manifest is written after
    the files it lists, atomically, so a crash between the two leaves the old manifest naming the old files
    (whole), never a new file under an old checksum trusted. A file whose bytes do not give its checksum (written
    over, cut, zeroed, deleted) raises :class:`StateDamaged` naming it: the caller rebuilds that part from the
    store, the truth.

Lock
    :func:`lock_folder` takes an exclusive ``flock`` on ``<folder>/lock``: two processes never write one state
    folder (a distributed takeover's new writer and the old writer still closing, or two crawls of one store). The
    kernel releases it when its process dies, ``kill -9`` included. Within one process it is shared (the URL filter
    and the dedup indexes of one crawl write different files of one folder).
"""

from __future__ import annotations

import fcntl
import json
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

import xxhash

#: The checksum a manifest names its files' by (the field it keeps its own under, too).
CHECKSUM = "xxh3_128"
_READ = 8 << 20  # bytes read at a time to hash a file (a reused buffer: no allocation a chunk)


class StateDamaged(ValueError):
    """A file of a persisted state is missing or its bytes are not those written: not to be used."""

    def __init__(self, path: Path | str, reason: str) -> None:
        self.path = Path(path)
        super().__init__(f"{path}: {reason}")


def digest(data) -> str:
    """The checksum of bytes (anything with the buffer protocol: bytes, a numpy array)."""
    return xxhash.xxh3_128_hexdigest(data)


def file_digest(path: Path) -> str:
    """The checksum of a file's bytes, read a chunk at a time."""
    hasher = xxhash.xxh3_128()
    buffer = bytearray(_READ)
    view = memoryview(buffer)
    with open(path, "rb", buffering=0) as handle:
        while read := handle.readinto(buffer):
            hasher.update(view[:read])
    return hasher.hexdigest()


def verify_file(path: Path, expected: object) -> None:
    """Raise :class:`StateDamaged` unless ``path`` exists and its bytes give the checksum ``expected``."""
    if not isinstance(expected, str):
        raise StateDamaged(path, "no checksum recorded for it")
    try:
        found = file_digest(path)
    except FileNotFoundError:
        raise StateDamaged(path, "missing (deleted?)") from None
    if found != expected:
        raise StateDamaged(path, f"checksum mismatch (written over, cut or zeroed: {CHECKSUM} {found}, written "
                                 f"{expected})")


def write_durably(path: Path, write: Callable[[BinaryIO], object]) -> str:
    """Write ``path`` through ``write(handle)`` so that a reader sees the old file or the new one, never a torn
    one: into a temporary file beside it, flushed to disk (fsync), then renamed over it (atomic on POSIX).
    Returns the checksum of what was written (read back before the rename, from the page cache), for the
    manifest that lists the file."""
    temporary = path.with_name(path.name + ".tmp")
    with open(temporary, "wb") as handle:
        write(handle)
        handle.flush()
        os.fsync(handle.fileno())
    checksum = file_digest(temporary)
    os.replace(temporary, path)
    return checksum


def _body(value: dict) -> bytes:
    return json.dumps(value, sort_keys=True).encode()


def write_manifest(path: Path, value: dict) -> None:
    """Replace the manifest ``path`` atomically with ``value`` (a JSON object) and the checksum of its content."""
    if CHECKSUM in value:
        raise ValueError(f"a manifest's own field {CHECKSUM!r} is reserved for its checksum")
    record = {**value, CHECKSUM: digest(_body(value))}
    write_durably(path, lambda handle: handle.write(_body(record)))


def read_manifest(path: Path) -> dict:
    """The manifest :func:`write_manifest` wrote; FileNotFoundError when there is none, :class:`StateDamaged`
    when it cannot be read or its content is not the one written."""
    try:
        record = json.loads(path.read_bytes())
    except FileNotFoundError:
        raise
    except (OSError, ValueError) as exc:
        raise StateDamaged(path, f"unreadable ({exc})") from None
    if not isinstance(record, dict) or not isinstance(record.get(CHECKSUM), str):
        raise StateDamaged(path, "no checksum (damaged, or written by a version before checksums)")
    expected = record.pop(CHECKSUM)
    if digest(_body(record)) != expected:
        raise StateDamaged(path, "checksum mismatch (its content is not the one written)")
    return record


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


# -- the folder lock ---------------------------------------------------------------------------------------
LOCK_FILE = "lock"


class FolderBusy(OSError):
    """Another process holds a state folder's lock."""

    def __init__(self, folder: Path, holder: str) -> None:
        self.folder, self.holder = folder, holder
        super().__init__(f"{folder} is being written by another process ({holder or 'pid unknown'})")


class FolderLock:
    """An exclusive hold on a folder, shared within this process (see :func:`lock_folder`); :meth:`release` once."""

    def __init__(self, key: str) -> None:
        self._key = key
        self._released = False

    def release(self) -> None:
        if self._released:
            return
        self._released = True
        with _registry_lock:
            entry = _held[self._key]
            entry[1] -= 1
            if entry[1] == 0:
                del _held[self._key]
                os.close(entry[0])  # closing the descriptor releases the flock


_registry_lock = threading.Lock()
_held: dict[str, list[int]] = {}  # folder's real path -> [descriptor holding the flock, holds]


def lock_folder(folder: Path, *, wait: float = 0.0, poll: float = 0.1) -> FolderLock:
    """Hold ``folder`` (created if need be) for writing: an exclusive ``flock`` on ``folder/lock``, waited for up
    to ``wait`` seconds, then :class:`FolderBusy` naming the holder's pid. A second hold in this process shares
    the first."""
    folder.mkdir(parents=True, exist_ok=True)
    key = os.path.realpath(folder)
    deadline = time.monotonic() + wait
    while True:
        with _registry_lock:
            if key in _held:
                _held[key][1] += 1
                return FolderLock(key)
            descriptor = os.open(Path(key) / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.pread(descriptor, 200, 0).decode(errors="replace").strip()
                os.close(descriptor)
            except BaseException:
                os.close(descriptor)
                raise
            else:
                os.ftruncate(descriptor, 0)
                os.pwrite(descriptor, f"pid {os.getpid()}\n".encode(), 0)  # who holds it, for the other's message
                _held[key] = [descriptor, 1]
                return FolderLock(key)
        if time.monotonic() >= deadline:
            raise FolderBusy(folder, holder)
        time.sleep(poll)
