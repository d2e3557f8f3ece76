"""Where each area's questions sit in an ENEM exam, by year: the exam's own numbering (1-180) and the two ways
INEP's item files number positions.

The exam numbers its 180 questions across both days: from 2017 LC 1-45, CH 46-90, CN 91-135, MT 136-180; from
2009 to 2016 CH, CN, LC, MT in that order. The first five LC questions are the foreign-language ones (English or
Spanish by the candidate's choice), printed twice. ITENS_PROVA files use that numbering in CO_POSICAO in most
years; the 2017 file numbers positions within each area (1-45) and lists the LC foreign-language items one after
the other (English 1-5, Spanish 6-10, the common items 11-50). `file_position` maps a question to the file's
position either way.
"""
from __future__ import annotations

import pandas as pd

__all__ = ["area_of", "first_number", "is_foreign_position", "file_position"]


def _order(year: int) -> tuple[str, ...]:
    return ("LC", "CH", "CN", "MT") if year >= 2017 else ("CH", "CN", "LC", "MT")


def area_of(year: int, number: int) -> str | None:
    """The area of question `number` in the ENEM of `year` (None before 2009 or outside 1..180)."""
    if year < 2009 or not 1 <= number <= 180:
        return None
    return _order(year)[(number - 1) // 45]


def first_number(year: int, area: str) -> int:
    """The exam's number of the first question of `area` (1, 46, 91 or 136)."""
    return 1 + 45 * _order(year).index(area)


def is_foreign_position(year: int, area: str | None, number: int) -> bool:
    """The first five LC positions are the English/Spanish items (1-5 since 2017, 91-95 before)."""
    first = 1 if year >= 2017 else 91
    return area == "LC" and first <= number < first + 5


def file_position(rows: pd.DataFrame, year: int, area: str, number: int, foreign_language: str | None) -> int:
    """The CO_POSICAO of exam question `number` in one booklet's ITENS_PROVA `rows` of `area`: the exam number
    itself, or (a file numbering within the area, 2017) its place in the area, shifted past the Spanish block
    for the LC common items and the Spanish ones when the file lists the two foreign blocks one after the other."""
    positions = rows["CO_POSICAO"].to_numpy()
    first = first_number(year, area)
    within = len(positions) > 0 and positions.min() < first and positions.max() <= 50   # numbered within the area
    place = number - first + 1 if within else number
    lingua = rows["TP_LINGUA"].to_numpy(dtype=float)
    english, spanish = set(positions[lingua == 0]), set(positions[lingua == 1])
    if area == "LC" and english and spanish and not english & spanish:   # English 1-5, Spanish 6-10, then 11-50
        foreign = is_foreign_position(year, area, number)
        return place if foreign and foreign_language == "en" else place + len(spanish)
    return place
