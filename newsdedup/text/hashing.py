"""Non-cryptographic hashes (MurmurHash3 via ``mmh3``) and the one signed/unsigned conversion for storage.

Every hash here is unsigned. SQLite and PostgreSQL store signed 64-bit integers (sqlite3 raises
OverflowError for values >= 2**63), so a 64-bit fingerprint crosses the storage boundary through
:func:`to_signed64` / :func:`from_signed64` and nowhere else.

>>> text_fingerprint("新闻") == hash128("新闻").to_bytes(16, "little")
True
>>> from_signed64(to_signed64(2**64 - 1)) == 2**64 - 1 and to_signed64(2**64 - 1) == -1
True
"""

from __future__ import annotations

import mmh3

__all__ = ["hash64", "hash128", "text_fingerprint", "to_signed64", "from_signed64"]

_U64 = 1 << 64
_I64_MIN = -(1 << 63)
_I64_MAX = (1 << 63) - 1


def _utf8(s: str | bytes) -> bytes:
    if isinstance(s, bytes):
        return s
    if not isinstance(s, str):
        raise ValueError(f"expected str or bytes, got {type(s).__name__}")
    # surrogatepass: a lone surrogate (from badly decoded pages) hashes deterministically instead of raising.
    return s.encode("utf-8", "surrogatepass")


def hash64(s: str | bytes) -> int:
    """Unsigned 64-bit MurmurHash3 (x64 128-bit variant, low half) of the UTF-8 bytes of ``s``.

    >>> 0 <= hash64("记者") < 2**64
    True
    """
    return mmh3.hash64(_utf8(s), signed=False)[0]


def hash128(s: str | bytes) -> int:
    """Unsigned 128-bit MurmurHash3 (x64) of the UTF-8 bytes of ``s``; its low 64 bits equal :func:`hash64`.

    >>> hash128("记者") & (2**64 - 1) == hash64("记者")
    True
    """
    return mmh3.hash128(_utf8(s), signed=False)


def text_fingerprint(normalized_text: str) -> bytes:
    """16-byte MurmurHash3 x64 128-bit digest of the UTF-8 text: the exact-duplicate key.

    Pass text through :func:`newsdedup.text.normalize.normalize_text` first. The bytes are
    ``hash128(text).to_bytes(16, "little")``.
    """
    return mmh3.mmh3_x64_128_digest(_utf8(normalized_text))


def to_signed64(u: int) -> int:
    """Map an unsigned 64-bit integer to the signed 64-bit integer with the same bits (for SQL storage).

    >>> to_signed64(2**63), to_signed64(2**63 - 1)
    (-9223372036854775808, 9223372036854775807)
    """
    if not 0 <= u < _U64:
        raise ValueError(f"to_signed64 expects an unsigned 64-bit int in [0, 2**64), got {u!r}")
    return u - _U64 if u > _I64_MAX else u


def from_signed64(s: int) -> int:
    """Inverse of :func:`to_signed64`: the unsigned value of a signed 64-bit integer read back from SQL.

    >>> from_signed64(-1)
    18446744073709551615
    """
    if not _I64_MIN <= s <= _I64_MAX:
        raise ValueError(f"from_signed64 expects a signed 64-bit int in [-2**63, 2**63), got {s!r}")
    return s + _U64 if s < 0 else s
