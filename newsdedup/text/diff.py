"""What a copier changed: a diff of two texts by sentence, for people (the desk's story page).

Texts are cut into paragraphs (lines) and sentences (after 。！？!? and ；), and :class:`difflib.SequenceMatcher`
aligns the two lists of sentences: a lead added shows as inserted sentences before the first kept one, paragraphs
cut as deleted ones, a sentence edited as a replaced pair (with the changed characters marked inside it).

>>> [(op, old, new) for op, old, new, _ in diff_sentences("甲说了。乙来了。", "甲说了。丙来了。")]
[('equal', '甲说了。', '甲说了。'), ('replace', '乙来了。', '丙来了。')]
>>> [op for op, *_ in diff_sentences("一。二。", "导语。一。二。")]
['insert', 'equal', 'equal']
"""

from __future__ import annotations

import difflib
import re

_SENTENCE = re.compile(r"[^。！？!?；;\n]*(?:[。！？!?；;]+[”’」』\"']?|\n|$)")


def sentences(text: str) -> list[str]:
    """The sentences of ``text`` in order, stripped; a paragraph break ends one too.

    >>> sentences("第一句。第二句！\\n新段落")
    ['第一句。', '第二句！', '新段落']
    """
    return [s.strip() for s in _SENTENCE.findall(text or "") if s.strip()]


def _inline(old: str, new: str) -> tuple[list[tuple[str, bool]], list[tuple[str, bool]]]:
    """Each side of an edited sentence as (text, changed) pieces, by character."""
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    left: list[tuple[str, bool]] = []
    right: list[tuple[str, bool]] = []
    for op, a0, a1, b0, b1 in matcher.get_opcodes():
        if a1 > a0:
            left.append((old[a0:a1], op != "equal"))
        if b1 > b0:
            right.append((new[b0:b1], op != "equal"))
    return left, right


def diff_sentences(origin: str, copy: str) -> list[tuple[str, str, str, tuple]]:
    """``(op, origin_sentence, copy_sentence, pieces)`` in reading order: ``equal``, ``insert`` (only in the copy),
    ``delete`` (only in the origin) or ``replace`` (a sentence edited; ``pieces`` are both sides' (text, changed)
    pieces). Replaced runs of unequal length pair sentences in order, the rest inserted or deleted."""
    a, b = sentences(origin), sentences(copy)
    out: list[tuple[str, str, str, tuple]] = []
    for op, a0, a1, b0, b1 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            out += [("equal", a[i], b[j], ()) for i, j in zip(range(a0, a1), range(b0, b1))]
        elif op == "delete":
            out += [("delete", a[i], "", ()) for i in range(a0, a1)]
        elif op == "insert":
            out += [("insert", "", b[j], ()) for j in range(b0, b1)]
        else:
            pairs = min(a1 - a0, b1 - b0)
            for k in range(pairs):
                old, new = a[a0 + k], b[b0 + k]
                # Two sentences sharing less than a third are not one edited: a deletion and an insertion.
                if difflib.SequenceMatcher(None, old, new, autojunk=False).ratio() < 0.34:
                    out += [("delete", old, "", ()), ("insert", "", new, ())]
                else:
                    out.append(("replace", old, new, _inline(old, new)))
            out += [("delete", a[i], "", ()) for i in range(a0 + pairs, a1)]
            out += [("insert", "", b[j], ()) for j in range(b0 + pairs, b1)]
    return out


def diff_summary(rows: list[tuple[str, str, str, tuple]]) -> dict[str, int]:
    """Sentences kept, added, cut and edited.

    >>> diff_summary(diff_sentences("一。二。三。", "导语。一。二改了。"))
    {'kept': 1, 'added': 1, 'cut': 1, 'edited': 1}
    """
    names = {"equal": "kept", "insert": "added", "delete": "cut", "replace": "edited"}
    summary = dict.fromkeys(names.values(), 0)
    for op, *_ in rows:
        summary[names[op]] += 1
    return summary
