"""MurmurHash3 wrappers and the signed/unsigned conversion used at the SQL boundary."""

from __future__ import annotations

import sqlite3

import mmh3
import pytest

from newsdedup.text.hashing import from_signed64, hash64, hash128, text_fingerprint, to_signed64


def test_hashes_are_unsigned_and_deterministic() -> None:
    words = ["新闻", "记者", "", "a", "北京大学", "x" * 1000]
    for word in words:
        assert 0 <= hash64(word) < 2**64
        assert 0 <= hash128(word) < 2**128
        assert hash64(word) == hash64(word)
    assert len({hash64(word) for word in words}) == len(words)


def test_hashes_match_mmh3_of_utf8() -> None:
    data = "新闻".encode()
    assert hash64("新闻") == mmh3.hash64(data, signed=False)[0]
    assert hash128("新闻") == mmh3.hash128(data, signed=False)
    assert hash64(data) == hash64("新闻")
    assert hash128("新闻") & (2**64 - 1) == hash64("新闻")


def test_hashes_are_pinned_so_stored_fingerprints_stay_valid() -> None:
    # Stores and snapshots keep these values across runs and releases: another seed, sign, encoding or hash
    # function would silently make every stored fingerprint unmatchable.  新闻's 64-bit hash needs the top bit,
    # which is why storage converts to signed.
    assert hash64("新闻") == 11327159480249689406 >= 2**63
    assert hash64("0") == 3083240331115144064
    assert hash128("北京大学") == 0xC3AC39836E7FD6E7CDA2B59F867E6395
    assert text_fingerprint("市图书馆新馆正式开放").hex() == "fc82b9fea6f4bd5801f6ddea325e0b2d"


def test_text_fingerprint_is_16_little_endian_bytes_of_hash128() -> None:
    fingerprint = text_fingerprint("市图书馆新馆正式开放")
    assert isinstance(fingerprint, bytes) and len(fingerprint) == 16
    assert fingerprint == hash128("市图书馆新馆正式开放").to_bytes(16, "little")
    assert text_fingerprint("市图书馆新馆正式开放。") != fingerprint


def test_lone_surrogate_hashes_instead_of_crashing() -> None:
    # mmh3 5.3 crashes the interpreter (segfault) on a str holding a lone surrogate; the wrappers encode first.
    assert hash64("a\ud800b") == hash64("a\ud800b".encode("utf-8", "surrogatepass"))
    assert 0 <= hash128("a\udfffb") < 2**128
    assert len(text_fingerprint("\ud800")) == 16


@pytest.mark.parametrize(
    ("unsigned", "signed"),
    [(0, 0), (1, 1), (2**63 - 1, 2**63 - 1), (2**63, -(2**63)), (2**63 + 1, -(2**63) + 1), (2**64 - 1, -1)],
)
def test_signed_round_trip(unsigned: int, signed: int) -> None:
    assert to_signed64(unsigned) == signed
    assert from_signed64(signed) == unsigned
    assert from_signed64(to_signed64(unsigned)) == unsigned


def test_signed_values_survive_sqlite() -> None:
    connection = sqlite3.connect(":memory:")
    connection.execute("CREATE TABLE t (fingerprint INTEGER)")
    with pytest.raises(OverflowError):
        connection.execute("INSERT INTO t VALUES (?)", (2**63,))
    values = [0, 2**63 - 1, 2**63, 2**64 - 1, hash64("新闻")]
    connection.executemany("INSERT INTO t VALUES (?)", [(to_signed64(value),) for value in values])
    stored = [from_signed64(row[0]) for row in connection.execute("SELECT fingerprint FROM t ORDER BY rowid")]
    assert stored == values


@pytest.mark.parametrize("value", [-1, 2**64, 2**70])
def test_to_signed64_rejects_out_of_range(value: int) -> None:
    with pytest.raises(ValueError, match="unsigned 64-bit"):
        to_signed64(value)


@pytest.mark.parametrize("value", [2**63, -(2**63) - 1])
def test_from_signed64_rejects_out_of_range(value: int) -> None:
    with pytest.raises(ValueError, match="signed 64-bit"):
        from_signed64(value)


def test_rejects_non_text() -> None:
    with pytest.raises(ValueError):
        hash64(12345)  # type: ignore[arg-type]
