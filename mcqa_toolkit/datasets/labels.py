"""Answer keys as sources write them: one letter ("B", "b", " B "), several letters in one string ("AD", "A,D",
"A D") or a list of letters (["A", "D"]). A key that names no option letter ('@', '。', "", [], a letter beyond the
item's options) makes the record unusable (DatasetError for the key's field): a key is never
guessed. Whether several letters make a multiple-answer item or an unusable record is the format's to say
(`answer_letters` for formats that allow several answers, `letter_to_index` for formats with one).
"""
from __future__ import annotations

import re
import unicodedata
from typing import Any

from mcqa_toolkit.items import LETTERS, DatasetError

_SEPARATORS = re.compile(r"[\s,;/]+")   # "A,D", "A, D", "A D", "A;D", "A/D"


def answer_letters(value: Any, n_options: int, path: Any, n: Any, key: str) -> tuple[int, ...]:
    """The sorted option indices a key names: 'B' -> (1,); 'AD', 'A,D', 'a d', ['A', 'D'] -> (0, 3). Letters are
    read case-blind after Unicode compatibility folding (a full-width 'Ａ' is 'A'); anything else -> DatasetError."""
    parts = list(value) if isinstance(value, (list, tuple)) else [value]
    if not parts:
        raise DatasetError(path, n, key, "empty list of answer letters")
    letters: list[str] = []
    for part in parts:
        if not isinstance(part, str):
            raise DatasetError(path, n, key, f"expected answer letters, got {type(part).__name__} {part!r:.40}")
        letters += _SEPARATORS.sub("", unicodedata.normalize("NFKC", part)).upper()
    valid = LETTERS[:n_options]
    if not letters:
        raise DatasetError(path, n, key, f"empty answer {value!r:.40}")
    if any(c not in valid for c in letters):
        raise DatasetError(path, n, key, f"answer {value!r:.40} is not written in letters of the options ({valid})")
    return tuple(sorted({LETTERS.index(c) for c in letters}))   # a letter written twice names its option once


def letter_to_index(value: Any, n_options: int, path: Any, n: Any, key: str) -> int:
    """The option a single-answer key names: 'B' / 'b' / ' B ' -> 1. Several letters ('AD': a format with one key
    cannot say which), or anything `answer_letters` refuses -> DatasetError."""
    if not isinstance(value, str):
        raise DatasetError(path, n, key, f"expected an answer letter, got {type(value).__name__} {value!r:.40}")
    found = answer_letters(value, n_options, path, n, key)
    if len(found) != 1:
        raise DatasetError(path, n, key, f"answer {value!r:.40} names {len(found)} options; this format has one key")
    return found[0]
