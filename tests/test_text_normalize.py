"""normalize_text: width folding, invisible characters, whitespace, idempotence."""

from __future__ import annotations

import random

import pytest

from newsdedup.text.normalize import normalize_text


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("ＡＢＣ１２３", "ABC123"),  # full-width letters and digits
        ("你好，世界！（完）", "你好,世界!(完)"),  # full-width punctuation folds to ASCII
        ("新闻\u3000\u3000正文", "新闻 正文"),  # ideographic spaces collapse to one space
        ("  a \t\n\r\n b  ", "a b"),
        ("北\u200b京\u200d大\ufeff学\u00ad", "北京大学"),  # zero-width, joiner, BOM, soft hyphen
        ("控\x00制\x07字\x1b符\x7f", "控制字符"),  # C0/C1 controls other than whitespace
        ("第一行\u2028第二行\x85第三行", "第一行 第二行 第三行"),  # line separators are whitespace
        ("ｶﾀｶﾅ", "カタカナ"),  # half-width katakana widens
        ("\u00a0nbsp\u00a0", "nbsp"),
        ("", ""),
        (" \u200b \n", ""),
    ],
)
def test_normalize_cases(raw: str, expected: str) -> None:
    assert normalize_text(raw) == expected


def test_copies_differing_in_width_and_whitespace_normalise_equal() -> None:
    web_copy = "  本报讯（记者 张三）　10月18日，市图书馆新馆开放。\r\n\r\n  新馆面积约５.２万平方米。"
    app_copy = "本报讯(记者 张三) 10月18日,市图书馆新馆开放。\n新馆面积约5.2万平方米。\u200b"
    assert normalize_text(web_copy) == normalize_text(app_copy)


def test_different_text_stays_different() -> None:
    assert normalize_text("市图书馆新馆开放") != normalize_text("市图书馆老馆开放")


def test_idempotent_on_random_tricky_strings() -> None:
    # Characters chosen to interact: combining marks around zero-width characters, compatibility forms,
    # whitespace of every kind, controls.
    alphabet = list("ae中文ＡＢ１２，。　 \t\n\r\x85\u2028\u00a0\u200b\u200d\ufeff\u00ad\x00\x1f")
    alphabet += ["\u0301", "\u0308", "\u3099", "ﬁ", "Ⅻ", "①", "㍿", "ｶ", "ﾞ", "\ud800"]
    rng = random.Random(20181018)
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        once = normalize_text(text)
        assert normalize_text(once) == once, repr(text)
        assert once == once.strip() and "  " not in once


def test_rejects_bytes() -> None:
    with pytest.raises(ValueError, match="decode bytes first"):
        normalize_text("新闻".encode())  # type: ignore[arg-type]


def test_the_shipped_invisible_ranges_are_what_the_unicode_tables_give() -> None:
    import unicodedata

    from newsdedup.text import normalize

    if unicodedata.unidata_version != "14.0.0":
        pytest.skip("the shipped ranges are those of Unicode 14.0; other versions scan their own tables")
    assert list(normalize._INVISIBLE_RANGES_14) == normalize._invisible_ranges()  # noqa: SLF001


def test_nfkc_is_unicodedatas_nfkc_on_random_and_composing_text() -> None:
    import sys
    import unicodedata

    from newsdedup.text.normalize import nfkc

    rng = random.Random(7)
    every = [c for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF]
    # Full-width forms beside combining marks, jamo and the characters NFKC composes them with.
    tricky = [0xFF0C, 0xFF21, 0xFF41, 0xFF10, 0xFF1C, 0x0338, 0x3000, 0x00A0, 0x2026, 0x0301, 0x0308, 0x3099, 0x1100,
              0x1161, 0x11A8, 0x0041, 0x0065, 0x4E00, 0x3002, 0x2F00]
    for _ in range(30_000):
        text = "".join(chr(rng.choice(every) if rng.random() < 0.4 else rng.choice(tricky)) for _ in range(rng.randint(1, 9)))
        assert nfkc(text) == unicodedata.normalize("NFKC", text), [hex(ord(c)) for c in text]
    prose = "全国人大常委会（ＮＰＣ）第１次会议：“加快５Ｇ建设”……　记者\xa0王明"
    assert nfkc(prose) == unicodedata.normalize("NFKC", prose)
