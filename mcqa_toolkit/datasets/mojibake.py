"""Mojibake: UTF-8 text that was decoded as cp1252 (or latin-1) on its way into a file, e.g. "QuestÃ£o" for
"Questão", "â€œ" for "“", "Âº" for "º". `repair` undoes it where the repair is unambiguous and says where it is
not.

A candidate is what one UTF-8 sequence looks like after that mis-decoding: a lead character (U+00C2-U+00F4, the
bytes 0xC2-0xF4) followed by the right number of continuation characters (what cp1252 or latin-1 make of the
bytes 0x80-0xBF). Its characters are encoded back to those bytes and decoded as UTF-8; the candidate is repaired
when that succeeds and gives Latin letters or common punctuation (PLAUSIBLE). Real text can hold such a pair
("IRMÃ”", "ATÉ…": an uppercase accented letter before a closing quote or an ellipsis), so a text is repaired only
when at least one of its candidates is *unambiguous*, i.e. has a continuation character that never follows a
letter in real text (anything but quotes, dashes, an ellipsis, a degree sign or a no-break space): "Ã§", "Ã£",
"â€œ" are, "Ã”" alone is not. Text encoded twice ("ÃƒÂ§") is repaired in up to MAX_PASSES passes.

What cannot be repaired reliably is left as it is and reported (`Repair.unrepaired`): a candidate that does not
decode (a byte was lost: "prÃncipe", where "í" lost its soft hyphen), C1 control characters (U+0080-U+009F, the
undefined cp1252 bytes), U+FFFD (bytes already replaced), or "Ã" before a lower-case letter. Loaders keep such
text, say so in the item's meta and warn once per load (TextRepairWarning), never guessing a letter.

Why not ftfy (the maintained library for mojibake): on this module's tests, ftfy 6.3.1's `fix_encoding` undoes all
12 garbled sentences but changes 2 of the 7 real texts ("IRMÃ”" -> "IRMÔ", "Ó” e Ã–" -> "Ӕ e Ö") and reports
nothing it could not repair.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Repair", "repair", "TextRepairWarning", "MAX_PASSES"]

MAX_PASSES = 3

# what cp1252 decodes the bytes 0x80-0xBF to (its five undefined bytes as latin-1 does: C1 controls), and back
_CP1252 = {}
for _b in range(0x80, 0xC0):
    try:
        _CP1252[bytes([_b]).decode("cp1252")] = _b
    except UnicodeDecodeError:
        pass
_TO_BYTE = {**{chr(b): b for b in range(0x80, 0xC0)}, **_CP1252}
_CONT = "[" + "".join(re.escape(c) for c in sorted(_TO_BYTE)) + "]"
_CANDIDATE = re.compile(f"[\u00c2-\u00df]{_CONT}|[\u00e0-\u00ef]{_CONT}{{2}}|[\u00f0-\u00f4]{_CONT}{{3}}")
# decoded characters we accept: Latin-1 letters and signs, Latin Extended-A/B, spacing and combining accents,
# general punctuation, currency and letter-like symbols (№, ™), arrows and mathematical operators; and the C1
# controls, which text encoded twice passes through (a "”" is "Â\x9d" after its first repair): any left at the end
# count as unrepaired
PLAUSIBLE = re.compile("^[\u0080-\u024f\u02b0-\u036f\u2000-\u206f\u20a0-\u20cf\u2100-\u22ff]+$")
# continuation characters that do follow letters in real text: quotes, dashes, ellipsis, degree, no-break space
_AMBIGUOUS = set("\u201c\u201d\u2018\u2019\u00ab\u00bb\u2013\u2014\u2026\u00b0\u00a0")
_BROKEN = re.compile("[\u0080-\u009f\ufffd]|\u00c3(?=[a-z])")


class TextRepairWarning(UserWarning):
    """Records whose text keeps mojibake that could not be repaired reliably (their meta says so)."""


@dataclass(frozen=True)
class Repair:
    """`text` after the repair; `repaired`: candidates replaced; `unrepaired`: signs of broken encoding left."""

    text: str
    repaired: int = 0
    unrepaired: bool = False


def _decoded(candidate: str) -> str | None:
    try:
        out = bytes(_TO_BYTE.get(c, ord(c)) for c in candidate).decode("utf-8")  # leads: U+00C2-F4 = their byte
    except UnicodeDecodeError:
        return None
    return out if PLAUSIBLE.match(out) else None


def _unambiguous(candidate: str) -> bool:
    return any(c in _TO_BYTE and c not in _AMBIGUOUS for c in candidate)


def _one_pass(text: str) -> tuple[str, int]:
    found = [(m, _decoded(m.group())) for m in _CANDIDATE.finditer(text)]
    good = [(m, d) for m, d in found if d is not None]
    if not any(_unambiguous(m.group()) for m, _ in good):
        return text, 0
    out, last = [], 0
    for m, d in good:
        out += [text[last:m.start()], d]
        last = m.end()
    return "".join(out) + text[last:], len(good)


def repair(text: str) -> Repair:
    """`text` with its mojibake repaired where unambiguous (see the module docstring)."""
    repaired = 0
    for _ in range(MAX_PASSES):
        text, n = _one_pass(text)
        if not n:
            break
        repaired += n
    left = bool(_BROKEN.search(text)) or (repaired > 0 and any(_decoded(m.group()) is None
                                                               for m in _CANDIDATE.finditer(text)))
    return Repair(text, repaired, left)
