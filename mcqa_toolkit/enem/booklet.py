"""ENEM booklets as scoring needs them: item sets in INEP order, answer-string layouts, key agreement, and the
vectorised kernel that turns answer strings into EAP theta and official scores. Used by `enem.official`.

Pure numpy/pandas; the rules themselves are documented in `enem.official`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from mcqa_toolkit.enem.errata import blank_all_wrong
from mcqa_toolkit.enem.itens_prova import split_item_sets
from mcqa_toolkit.irt.ability import ability_eap, normal_grid

ENEM_CONSTANTS: dict[str, tuple[float, float]] = {
    "CH": (112.31, 501.489), "CN": (113.102, 501.144), "LC": (108.086, 499.978), "MT": (129.646, 500.02)}
# how a booklet's item set was chosen: its only set, the caller's choice, the answer key, or nothing could tell
RULES = ("single", "given", "key", "undetermined")


def _readonly(x: np.ndarray) -> np.ndarray:
    x.flags.writeable = False                    # module constants, never state
    return x


_points, _weights = normal_grid(40, -4.0, 4.0)
ENEM_GRID = (_readonly(_points), _readonly(_weights))   # (points, weights): INEP's quadrature
VALID = _readonly(np.isin(np.arange(256), np.frombuffer(b"ABCDE.*", dtype=np.uint8)))  # byte -> valid mark
_BLANK = ord(".")


class KeyMismatch(ValueError):
    """The answer key (TX_GABARITO) agrees with none of the booklet's item sets."""


@dataclass(frozen=True)
class Booklet:
    """One item set of a booklet in INEP order: key letters as bytes, language (-1 = common), annulled flag,
    a, b, c; `item_set` is its number (from 1) among the booklet's `n_sets` sets. rows: the index labels of its
    ITENS_PROVA rows in that order; estimated: the CO_ITEM of scored items whose (a, b, c) are estimates
    (column PARAMS_ESTIMATED, see `enem.errata`)."""

    co_prova: int
    item_set: int
    n_sets: int
    key: np.ndarray       # (n,) uint8
    lingua: np.ndarray    # (n,) int: 0 English, 1 Spanish, -1 common
    scored: np.ndarray    # (n,) bool: not annulled
    a: np.ndarray
    b: np.ndarray
    c: np.ndarray
    rows: np.ndarray | None = None
    estimated: tuple[int, ...] = ()


def check_area(area: str) -> str:
    key = str(area).strip().upper()
    if key not in ENEM_CONSTANTS:
        raise ValueError(f"area = {area!r}: unknown ENEM area; expected one of {sorted(ENEM_CONSTANTS)}")
    return key


def booklet_sets(items: pd.DataFrame, area: str) -> list[Booklet]:
    """One booklet's ITENS_PROVA rows of `area` -> its item sets (usually one), each in INEP order."""
    need = ["CO_POSICAO", "TX_GABARITO", "IN_ITEM_ABAN", "NU_PARAM_A", "NU_PARAM_B", "NU_PARAM_C"]
    missing = [col for col in need if col not in items.columns]
    if missing:
        raise ValueError(f"booklet_items lacks column(s) {missing} (expected INEP ITENS_PROVA rows)")
    if "SG_AREA" in items.columns and (items["SG_AREA"] != area).any():
        raise ValueError(f"booklet_items has rows of area(s) {sorted(set(items['SG_AREA']) - {area})}, not {area}")
    booklets = items["CO_PROVA"].unique() if "CO_PROVA" in items.columns else [-1]
    if len(booklets) != 1:
        raise ValueError(f"booklet_items holds {len(booklets)} booklets (CO_PROVA {sorted(booklets)}): pass one")
    if "TP_LINGUA" not in items.columns:
        items = items.assign(TP_LINGUA=np.nan)
    sets = split_item_sets(items)
    return [_booklet(rows, int(booklets[0]), k + 1, len(sets)) for k, rows in enumerate(sets)]


def _booklet(items: pd.DataFrame, co_prova: int, item_set: int, n_sets: int) -> Booklet:
    df = items.assign(_L=items["TP_LINGUA"].fillna(-1).astype(int)).assign(_S=lambda d: d["_L"].where(d["_L"] >= 0, 9))
    df = df.sort_values(["_S", "CO_POSICAO"], kind="stable")
    key = df["TX_GABARITO"].astype(str).str.strip().str.upper().str[:1].str.pad(1).to_numpy().astype("S1")
    scored = df["IN_ITEM_ABAN"].to_numpy() != 1
    estimated: tuple[int, ...] = ()
    if "PARAMS_ESTIMATED" in df.columns:
        estimated = tuple(int(i) for i in df.loc[df["PARAMS_ESTIMATED"].to_numpy(bool) & scored, "CO_ITEM"])
    a, b, c = (df[col].to_numpy(dtype=float) for col in ("NU_PARAM_A", "NU_PARAM_B", "NU_PARAM_C"))
    return Booklet(co_prova, item_set, n_sets, key.view(np.uint8), df["_L"].to_numpy(), scored, a, b, c,
                   df.index.to_numpy(), estimated)


def layout(bk: Booklet, length: int, lingua: int | None) -> np.ndarray:
    """For each booklet item (n,), the position of its answer in a string of `length`, -1 if not taken."""
    n, langs = bk.key.size, bk.lingua >= 0
    if not langs.any():
        if length != n:
            raise ValueError(f"answer string has {length} characters but booklet {bk.co_prova} has {n} items")
        return np.arange(n)
    if lingua not in (0, 1):
        raise ValueError(f"foreign_language = {lingua!r}: LC needs TP_LINGUA 0 (English) or 1 (Spanish)")
    other = bk.lingua == 1 - lingua
    if length == n:                              # both language blocks present (50 characters)
        return np.where(other, -1, np.arange(n))
    if length == n - other.sum():                # chosen language first, then the common items (45)
        return np.where(other, -1, np.cumsum(~other) - 1)
    raise ValueError(f"answer string has {length} characters but booklet {bk.co_prova} takes "
                     f"{n - other.sum()} or {n}")


def infer_lingua(answers: str, bk: Booklet) -> int | None:
    """TP_LINGUA of a 50-character LC string from its '9' block (None when the booklet has no languages)."""
    if not (bk.lingua >= 0).any() or len(answers) != bk.key.size:
        return None
    nines = [all(answers[i] == "9" for i in np.flatnonzero(bk.lingua == lang)) for lang in (0, 1)]
    if nines[0] != nines[1]:
        return 1 if nines[0] else 0
    raise ValueError("cannot tell the foreign language from the answer string ('9' must fill exactly one "
                     "language block); pass foreign_language=0 (English) or 1 (Spanish)")


def key_clash(bk: Booklet, key: str, lingua: int | None) -> str | None:
    """Where an answer key (TX_GABARITO string) disagrees with the set on a scored, administered item: a
    message, or None when it agrees. ValueError when the key's layout does not fit the booklet."""
    src = layout(bk, len(key), lingua)
    cols = (src >= 0) & bk.scored
    got = np.frombuffer(key.encode("latin-1"), dtype=np.uint8)[src[cols]]
    bad = got != bk.key[cols]
    if not bad.any():
        return None
    j = int(np.flatnonzero(cols)[np.argmax(bad)])
    return f"says {chr(got[np.argmax(bad)])!r} for item {j} but item_params_csv says {chr(bk.key[j])!r}"


def choose_sets(sets: list[Booklet], key: str | None, lingua: int | None, item_set: int | None = None,
                area: str = "") -> tuple[list[Booklet], str]:
    """The item set(s) to score a group of candidates with, and the rule that chose them (see RULES).

    A key whose layout does not fit the booklet (or None) cannot tell sets apart; a key that agrees with no
    set -> KeyMismatch. Several sets come back only under "undetermined": score each and say so.
    """
    if item_set is not None:
        if item_set not in range(1, len(sets) + 1):
            raise ValueError(f"item_set = {item_set!r}: booklet {sets[0].co_prova} has {len(sets)} item set(s)")
        sets = [sets[item_set - 1]]
    clashes = []
    for bk in sets:
        try:
            clashes.append(key_clash(bk, key, lingua) if key else "not comparable")
        except ValueError:
            clashes.append("not comparable")     # a key laid out differently from the answers
    agree = [bk for bk, clash in zip(sets, clashes, strict=True) if clash is None]
    comparable = any(clash != "not comparable" for clash in clashes)
    if comparable and not agree:
        what = clashes[0] if len(sets) == 1 else f"agrees with none of its {len(sets)} item sets"
        column = f"TX_GABARITO_{area}" if area else "the key"
        raise KeyMismatch(f"booklet {sets[0].co_prova}: {column} {what}; are both files from the same year?")
    if item_set is not None:
        return sets, "given"
    if len(sets) == 1:
        return sets, "single"
    return (agree, "key") if len(agree) == 1 else (agree or sets, "undetermined")


def blank_scores_zero(items: pd.DataFrame | None, year: int | None, area: str) -> bool:
    """Whether an all-blank answer sheet of `area` scores 0 (the reference rule) rather than the all-wrong
    pattern's score: the rows' BLANK_ALL_WRONG when they say (read_itens_prova sets it from the errata table it
    applied), else the shipped rules for `year` (`enem.errata.blank_all_wrong`: 2013, where INEP gave the
    development set's two blank sheets, LC 178: 287.1 and MT 182: 327.5, the all-wrong score); unknown: 0."""
    if items is not None and "BLANK_ALL_WRONG" in items.columns:
        known = items["BLANK_ALL_WRONG"].dropna()
        if len(known):
            return not bool(known.any())
    return not blank_all_wrong(year, area)


def score_chars(chars: np.ndarray, bk: Booklet, src: np.ndarray, area: str, rows: np.ndarray,
                blank_zero: bool = True) -> dict[str, np.ndarray]:
    """Score answer strings of one layout: chars (m, length) uint8 -> per-row arrays (m,). blank_zero: an
    all-blank row scores 0 (else the score of its theta, the all-wrong pattern's)."""
    taken = src >= 0
    sheet = chars[:, src[taken]]
    bad = ~VALID[sheet]
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise ValueError(f"answer string of row {rows[i]}: character {bytes([sheet[i, j]])!r} at position "
                         f"{src[taken][j]}; expected A-E, '.' or '*'")
    cols = taken & bk.scored
    u = (chars[:, src[cols]] == bk.key[cols]).astype(np.uint8)
    est = ability_eap(u, bk.a[cols], bk.b[cols], bk.c[cols], 1.0, *ENEM_GRID)
    k, d = ENEM_CONSTANTS[area]
    blank = (sheet == _BLANK).all(axis=1) & blank_zero
    score = np.where(blank, 0.0, np.round(k * est.theta + d, 1))
    return {"theta": est.theta, "psd": est.psd, "score": score,
            "n_correct": u.sum(axis=1, dtype=np.int64), "n_scored": np.full(u.shape[0], int(cols.sum()))}


def valid_rows(chars: np.ndarray, src: np.ndarray) -> np.ndarray:
    """(m,) True where every administered answer is A-E, '.' or '*'."""
    return VALID[chars[:, src[src >= 0]]].all(axis=1)
